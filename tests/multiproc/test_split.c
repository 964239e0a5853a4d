/* Communicators split from the world (coll_split): their ranks and sizes, and
 * collectives on them running at the same time as the world's, in worlds of 1 to 8
 * ranks, with the selector's choices and with point-to-point algorithms forced. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/launch_job.h"

static tt_job job;
static void teardown(void) { tt_job_cleanup(&job); }

TestSuite(split, .fini = teardown);

static void run_split(int size, const char* algorithms) {
  static const char* const needles[] = {"FAIL", "coll_split:", "tutti launch:", "[tutti]", NULL};
  tt_job_cleanup(&job);
  tt_job_init(&job, size, tt_timeout_ms(60000) / 1000, "coll_split");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=20000");
  if (algorithms) tt_job_env(&job, "TUTTI_ALGO=%s", algorithms);
  tt_job_run(&job, 70000);
  cr_assert(job.ended, "-n %d did not end: %s\n%s", size, tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "-n %d: %s\n%s", size, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  cr_expect_eq(job.process.exit_code, 0, "-n %d exited %d: %s\n%s", size, job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  for (int rank = 0; rank < size; ++rank) {
    char line[256], prefix[64];
    snprintf(prefix, sizeof prefix, "coll_split: rank %d, ", rank);
    cr_assert(tt_rank_line(job.output, rank, prefix, line, sizeof line), "-n %d: rank %d printed no summary:\n%s", size,
              rank, tt_excerpt(job.output, needles));
    int checks = -1, failures = -1;
    cr_assert_eq(sscanf(line, "%d checks, %d failures", &checks, &failures), 2, "bad summary \"%s\"", line);
    cr_expect_eq(failures, 0, "-n %d: rank %d: %s", size, rank, line);
    cr_expect_gt(checks, 20, "-n %d: rank %d made only %d checks", size, rank, checks);
  }
}

ParameterizedTestParameters(split, concurrent_with_the_world) {
  static int sizes[] = {1, 2, 3, 4, 5, 8};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, split, concurrent_with_the_world, .timeout = 90) { run_split(*size, NULL); }

Test(split, concurrent_with_point_to_point_algorithms, .timeout = 150) {
  const char* algorithms = "all_reduce=ring,broadcast=binomial,all_gather=bruck,barrier=dissemination";
  run_split(4, algorithms);
  tt_job_cleanup(&job);
  run_split(5, "all_reduce=recursive_doubling,broadcast=scatter_all_gather,all_gather=ring,barrier=dissemination");
}
