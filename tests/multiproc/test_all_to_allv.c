/* tutti_all_to_allv in real processes (coll_all_to_allv): blocks of every size from
 * none up, packed, placed in reverse with gaps, and asynchronous with the arrays
 * reused at once, byte for byte, at 1 to 5 ranks through the selector, with each
 * algorithm forced, past the selector's 64 KiB switch, and on 2 emulated nodes (UCX
 * between them); a rank sending a block larger than its peer expects makes that peer
 * fail with TUTTI_ERR_MISMATCH naming it. The bad arguments are in test_bad_input. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/launch_job.h"

static tt_job job;
static void teardown(void) { tt_job_cleanup(&job); }

TestSuite(all_to_allv, .fini = teardown);

static const char* const needles[] = {"FAIL", "MISMATCH", "coll_all_to_allv:", "tutti launch:", "[tutti]", NULL};

/* Runs `coll_all_to_allv --case values --scale scale` and checks every rank's summary. */
static void run_values(int size, int nodes, size_t scale, const char* algorithm) {
  tt_job_cleanup(&job);
  tt_job_init(&job, size, tt_timeout_ms(110000) / 1000, "coll_all_to_allv");
  tt_job_nodes(&job, nodes);
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "values");
  tt_job_arg(&job, "--scale");
  tt_job_arg(&job, "%zu", scale);
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=60000");
  if (algorithm) tt_job_env(&job, "TUTTI_ALGO=all_to_allv=%s", algorithm);
  tt_job_run(&job, 120000);
  cr_assert(job.ended, "-n %d did not end: %s\n%s", size, tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "-n %d: %s\n%s", size, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  cr_expect_eq(job.process.exit_code, 0, "-n %d exited %d: %s\n%s", size, job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  for (int rank = 0; rank < size; ++rank) {
    char line[96];
    /* 3 rounds x 4 element sizes x 3 forms. */
    snprintf(line, sizeof line, "coll_all_to_allv: rank %d ran 36 cases, 0 failures", rank);
    cr_expect(strstr(job.output, line) != NULL, "-n %d: no \"%s\": %s\n%s", size, line, tt_job_command(&job),
              tt_excerpt(job.output, needles));
  }
  printf("all_to_allv -n %d --nodes %d scale %zu %s: %lld ms\n", size, nodes, scale, algorithm ? algorithm : "selector",
         job.took_ms);
}

ParameterizedTestParameters(all_to_allv, values) {
  static int sizes[] = {1, 2, 3, 4, 5};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, all_to_allv, values, .timeout = 300) {
  run_values(*size, 0, 1, NULL);
  run_values(*size, 0, 3, "linear");
  run_values(*size, 0, 3, "pairwise");
}

/* Blocks up to 4 x 20000 elements of 8 bytes: past 64 KiB a peer on average, where the
 * selector takes the pairwise algorithm. */
Test(all_to_allv, large_blocks, .timeout = 300) {
  run_values(3, 0, 20000, NULL);
  run_values(4, 0, 20000, "linear");
}

Test(all_to_allv, between_nodes, .timeout = 300) {
  run_values(4, 2, 1, NULL);
  run_values(5, 2, 20000, NULL);
}

Test(all_to_allv, a_block_larger_than_expected, .timeout = 120) {
  tt_job_cleanup(&job);
  tt_job_init(&job, 3, tt_timeout_ms(60000) / 1000, "coll_all_to_allv");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "mismatch");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=3000");
  tt_job_run(&job, 70000);
  cr_assert(job.ended, "did not end: %s\n%s", tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "%s\n%s", tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect(strstr(job.output, "MISMATCH rank 0 status=TUTTI_ERR_MISMATCH") != NULL, "%s\n%s", tt_job_command(&job),
            tt_excerpt(job.output, needles));
  cr_expect(strstr(job.output, "recv_counts") != NULL, "the message says what to fix: %s",
            tt_excerpt(job.output, needles));
}
