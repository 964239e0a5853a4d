/* Node relays (TUTTI_RELAY=on, runtime/store/relay.h) with real processes: a few
 * hundred ranks on two emulated nodes meet through three stores (tutti launch's, and
 * each node's relay, served by its local rank 0) and run checked collectives; a rank
 * killed behind a relay is named by every survivor, on its node and on the other, who
 * then shrink through their relays and go on. Bounded and cleaned up by tt_job. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/launch_job.h"

static tt_job job;

static void cleanup(void) { tt_job_cleanup(&job); }

TestSuite(relays, .fini = cleanup);

static const char* const kNeedles[] = {"FAIL", "ERROR", "LOST", "SHRUNK", "relay", "tutti launch", NULL};

Test(relays, a_few_hundred_ranks_meet_through_three_stores, .timeout = 240) {
  enum { kRanks = 256 };
  tt_job_init(&job, kRanks, tt_timeout_ms(200000) / 1000, "coll_check");
  tt_job_nodes(&job, 2);
  const char* const args[] = {"--collectives",
                              "all_reduce,broadcast,all_gather",
                              "--counts",
                              "1,7",
                              "--dtypes",
                              "float32",
                              "--ops",
                              "sum",
                              NULL};
  for (const char* const* arg = args; *arg; ++arg) tt_job_arg(&job, "%s", *arg);
  tt_job_env(&job, "TUTTI_RELAY=on");
  tt_job_env(&job, "TUTTI_LOG_LEVEL=info");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=120000");
  cr_assert(tt_job_run(&job, 200000), "%s did not end:\n%s", tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  cr_expect_eq(tt_count(job.output, " 0 failures"), kRanks, "not every rank checked its collectives:\n%s",
               tt_excerpt(job.output, kNeedles));
  cr_expect_eq(tt_count(job.output, "INFO: rendezvous relay on 127.0.0.1:"), 2,
               "not one relay per node, served by its local rank 0:\n%s", tt_excerpt(job.output, kNeedles));
  cr_expect(job.process.exited && job.process.exit_code == 0, "%s", tt_excerpt(job.output, kNeedles));
}
