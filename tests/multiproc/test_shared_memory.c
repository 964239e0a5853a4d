/* tutti_mem_alloc through the launcher (coll_shared_memory): every collective that
 * moves data, on memory that every rank maps, read in place, at 2 to 5 ranks and on a
 * split; and ranks that ask for different sizes. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>

#include "tests/support/launch_job.h"

static tt_job job;
static void teardown(void) { tt_job_cleanup(&job); }

TestSuite(shared_memory, .fini = teardown);

static const char* const needles[] = {"FAIL", "coll_shared_memory:", "tutti launch:", "[tutti]", NULL};

static void expect_clean_summaries(int size, int least_checks) {
  cr_assert(job.ended, "-n %d did not end: %s\n%s", size, tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "-n %d: %s\n%s", size, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  for (int rank = 0; rank < size; ++rank) {
    char line[256], prefix[64];
    snprintf(prefix, sizeof prefix, "coll_shared_memory: rank %d, ", rank);
    cr_assert(tt_rank_line(job.output, rank, prefix, line, sizeof line), "-n %d: rank %d printed no summary:\n%s",
              size, rank, tt_excerpt(job.output, needles));
    int checks = -1, failures = -1;
    cr_assert_eq(sscanf(line, "%d checks, %d failures", &checks, &failures), 2, "bad summary \"%s\"", line);
    cr_expect_eq(failures, 0, "-n %d: rank %d: %s", size, rank, line);
    cr_expect_geq(checks, least_checks, "-n %d: rank %d made only %d checks", size, rank, checks);
  }
}

ParameterizedTestParameters(shared_memory, read_in_place) {
  static int sizes[] = {2, 3, 5};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, shared_memory, read_in_place, .timeout = 90) {
  tt_job_init(&job, *size, tt_timeout_ms(60000) / 1000, "coll_shared_memory");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=20000");
  tt_job_run(&job, 70000);
  expect_clean_summaries(*size, 40);
  cr_expect_eq(job.process.exit_code, 0, "-n %d exited %d: %s\n%s", *size, job.process.exit_code,
               tt_job_command(&job), tt_excerpt(job.output, needles));
}

Test(shared_memory, different_sizes_are_refused, .timeout = 60) {
  tt_job_init(&job, 3, tt_timeout_ms(30000) / 1000, "coll_shared_memory");
  tt_job_arg(&job, "sizes");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=2000");
  tt_job_run(&job, 40000);
  expect_clean_summaries(3, 1);
}
