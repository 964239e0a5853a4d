/* Ranks out of step (coll_desync): a rank that skips a collective is named in the
 * others' timeout with what it is doing instead; each rank's history of recent
 * collectives comes out through tutti_comm_dump, the timeout's log line and the dump
 * signal. Bounded and cleaned up by tt_job. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/launch_job.h"

static tt_job job;

static void cleanup(void) { tt_job_cleanup(&job); }

TestSuite(desync, .fini = cleanup);

static const char* const kNeedles[] = {"ERROR", "FAIL", "WARN", "#", "tutti", NULL};

Test(desync, skipped_collective_names_the_rank_and_what_it_does_instead, .timeout = 120) {
  tt_job_init(&job, 3, 60, "coll_desync");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "skip");
  tt_job_env(&job, "TUTTI_HEARTBEAT_INTERVAL_MS=200");
  cr_assert(tt_job_run(&job, 60000), "%s did not end:\n%s", tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  char line[4096];
  for (int rank = 0; rank < 2; ++rank) {
    cr_assert(tt_rank_line(job.output, rank, "ERROR TUTTI_ERR_TIMEOUT ", line, sizeof line), "rank %d:\n%s", rank,
              tt_excerpt(job.output, kNeedles));
    cr_expect(strstr(line,
                     " ms; ranks that had not joined it: 2 (last seen in recv from rank 0 (tag 99), "
                     "after all_reduce #3") != NULL,
              "rank %d does not say what rank 2 is doing: %s", rank, line);
    cr_expect(
        tt_rank_line(job.output, rank, "  #4 all_reduce float32 x 1 sum: failed (TIMEOUT) after ", line, sizeof line),
        "rank %d's history (log line and dump) lacks the failed #4:\n%s", rank, tt_excerpt(job.output, kNeedles));
  }
  cr_expect(tt_count(job.output, "Recent operations of comm \"world\"") == 2,
            "the timeout's log line on ranks 0 and 1 carries their history:\n%s", tt_excerpt(job.output, kNeedles));
  cr_expect(tt_rank_line(job.output, 2, "ERROR TUTTI_ERR_", line, sizeof line) &&
                strstr(line, "tutti_recv #1 (peer 0, tag 99)"),
            "%s", tt_excerpt(job.output, kNeedles));
  cr_expect(tt_rank_line(job.output, 2, "tutti: comm \"world\" (rank 2 of 3), recent collectives:", line, sizeof line),
            "%s", tt_excerpt(job.output, kNeedles));
  cr_expect(tt_rank_line(job.output, 2, "  #3 all_reduce float32 x 1 sum: done in ", line, sizeof line), "%s",
            tt_excerpt(job.output, kNeedles));
  cr_expect(!tt_rank_line(job.output, 2, "  #4 ", line, sizeof line), "rank 2 never issued a 4th collective:\n%s",
            tt_excerpt(job.output, kNeedles));
  cr_expect(job.process.exited && job.process.exit_code == 0, "%s", tt_excerpt(job.output, kNeedles));
}

/* No silent waits: the same skip, with the first report after 1 s. Ranks 0 and 1 wait
 * 3 s in all_reduce #4 and say so at 1 and 2 s, naming rank 2 and what it does
 * instead; rank 2 waits in its receive and says that rank 0 is in all_reduce #4. */
Test(desync, long_waits_say_what_they_wait_for_and_on_whom, .timeout = 120) {
  tt_job_init(&job, 3, 60, "coll_desync");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "skip");
  tt_job_env(&job, "TUTTI_HEARTBEAT_INTERVAL_MS=200");
  tt_job_env(&job, "TUTTI_WAIT_REPORT_MS=1000");
  cr_assert(tt_job_run(&job, 60000), "%s did not end:\n%s", tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  /* Each report says the time it was written, which a busy machine makes 1.1 s or
   * more for the report due at 1 s: the tenths are allowed, the whole second is not. */
  char report[512];
  for (int rank = 0; rank < 2; ++rank) {
    for (int waited = 1; waited <= 2; ++waited) {
      snprintf(report, sizeof report,
               "WARN: all_reduce #4 on comm \"world\" \\(rank %d of 3\\) has waited %d(\\.[0-9])? s for rank 2; ranks "
               "that have not joined it: 2 \\(last seen in recv from rank 0 \\(tag 99\\), after all_reduce #3, for ",
               rank, waited);
      cr_expect(tt_count_lines_matching(job.output, report) == 1, "rank %d did not report once at %d s: %s\n%s", rank,
                waited, report, tt_excerpt(job.output, kNeedles));
    }
  }
  cr_expect(
      tt_count_lines_matching(job.output,
                              "WARN: tutti_recv #1 \\(peer 0, tag 99\\) on comm \"world\" \\(rank 2 of 3\\) has "
                              "waited 1(\\.[0-9])? s for rank 0 to send it; rank 0 is in all_reduce #4 \\(for ") == 1,
      "%s", tt_excerpt(job.output, kNeedles));
  cr_expect(tt_count(job.output, "; it times out in ") >= 5, "each report says when the wait times out:\n%s",
            tt_excerpt(job.output, kNeedles));
}

Test(desync, dump_signal_writes_each_rank_history, .timeout = 120) {
  tt_job_init(&job, 2, 60, "coll_desync");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "signal");
  tt_job_env(&job, "TUTTI_DUMP_SIGNAL=USR1");
  cr_assert(tt_job_run(&job, 60000), "%s did not end:\n%s", tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  char line[512];
  for (int rank = 0; rank < 2; ++rank) {
    char header[128];
    snprintf(header, sizeof header, "tutti: comm \"world\" (rank %d of 2), recent collectives:", rank);
    cr_expect(tt_rank_line(job.output, rank, header, line, sizeof line), "rank %d:\n%s", rank,
              tt_excerpt(job.output, kNeedles));
    cr_expect(tt_rank_line(job.output, rank, "  #3 all_reduce float32 x 1 sum: done in ", line, sizeof line),
              "rank %d:\n%s", rank, tt_excerpt(job.output, kNeedles));
  }
  cr_expect(job.process.exited && job.process.exit_code == 0, "%s", tt_excerpt(job.output, kNeedles));
}

Test(desync, dump_signal_other_than_usr1_or_usr2_is_refused, .timeout = 120) {
  tt_job_init(&job, 1, 60, "coll_desync");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "signal");
  tt_job_env(&job, "TUTTI_DUMP_SIGNAL=KILL");
  cr_assert(tt_job_run(&job, 60000), "%s did not end:\n%s", tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  cr_expect(strstr(job.output, "TUTTI_DUMP_SIGNAL=\"KILL\" is not USR1 or USR2") != NULL, "%s",
            tt_excerpt(job.output, kNeedles));
  cr_expect(job.process.exited && job.process.exit_code != 0, "%s", tt_excerpt(job.output, kNeedles));
}
