/* tutti_mem_alloc through the launcher (coll_shared_memory): every collective that
 * moves data, on memory that every rank maps, read in place, at 2 to 5 ranks and on a
 * split; sizes that cannot be had; and a rank 0 that dies with a segment in /dev/shm. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    cr_assert(tt_rank_line(job.output, rank, prefix, line, sizeof line), "-n %d: rank %d printed no summary:\n%s", size,
              rank, tt_excerpt(job.output, needles));
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
  cr_expect_eq(job.process.exit_code, 0, "-n %d exited %d: %s\n%s", *size, job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
}

/* Sizes given to one rank only, sizes that wrap around when rounded and multiplied by
 * the ranks, the limit's edges and random ones: every rank fails at once, alike, and
 * the world goes on. The op timeout is far longer than the job may take, so that a
 * rank waiting it out fails the test. */
ParameterizedTestParameters(shared_memory, bad_sizes_fail_every_rank_at_once) {
  static int sizes[] = {2, 3};
  return cr_make_param_array(int, sizes, sizeof sizes / sizeof sizes[0]);
}

ParameterizedTest(int* size, shared_memory, bad_sizes_fail_every_rank_at_once, .timeout = 90) {
  tt_job_init(&job, *size, tt_timeout_ms(60000) / 1000, "coll_shared_memory");
  tt_job_arg(&job, "sizes");
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=600000");
  tt_job_run(&job, 70000);
  expect_clean_summaries(*size, 50);
  cr_expect_eq(job.process.exit_code, 0, "-n %d exited %d: %s\n%s", *size, job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
}

/* Whether /dev/shm holds a segment that process `pid` created ("tutti-<pid>-..."). */
static int segment_of(int pid) {
  char mine[64];
  snprintf(mine, sizeof mine, "tutti-%d-", pid);
  int found = 0;
  DIR* dir = opendir("/dev/shm");
  struct dirent* entry;
  while (dir != NULL && !found && (entry = readdir(dir)) != NULL) found = !strncmp(entry->d_name, mine, strlen(mine));
  if (dir != NULL) closedir(dir);
  return found;
}

/* Rank 0 dies between creating a segment and unlinking it (coll_shared_memory abandon):
 * the launcher, once the job is over, removes what it left. */
Test(shared_memory, launcher_removes_the_segment_of_a_rank_0_that_died, .timeout = 60) {
  tt_job_init(&job, 2, tt_timeout_ms(30000) / 1000, "coll_shared_memory");
  tt_job_arg(&job, "abandon");
  tt_job_run(&job, 40000);
  cr_assert(job.ended, "the job did not end: %s\n%s", tt_job_command(&job), tt_excerpt(job.output, needles));
  char line[128];
  int pid = 0;
  cr_assert(tt_rank_line(job.output, 0, "coll_shared_memory: rank 0 is pid ", line, sizeof line) &&
                sscanf(line, "%d", &pid) == 1,
            "rank 0 did not say its pid:\n%s", tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "%s", tt_excerpt(job.output, needles));
  cr_expect(strstr(job.output, "rank 0 dies with /dev/shm/tutti-"), "rank 0 did not die with its segment there:\n%s",
            tt_excerpt(job.output, needles));
  cr_expect(strstr(job.output, "rank 0 (pid") && strstr(job.output, "SIGKILL"),
            "the launcher did not report rank 0's death:\n%s", tt_excerpt(job.output, needles));
  /* The launcher removes it as the job ends ("removed N shared-memory segments"), unless
   * a rank 0 of a test running beside this one got there first: either way it is gone. */
  cr_expect(!segment_of(pid), "rank 0's segment (pid %d) is still in /dev/shm:\n%s", pid,
            tt_excerpt(job.output, needles));
}

/* The same without a launcher (ranks started by hand, as srun or mpirun start them):
 * the segment stays until the next rank 0 on the node creates one of its own, which
 * removes it. */
Test(shared_memory, next_rank_0_removes_the_segment_of_one_that_died, .timeout = 90) {
  tt_process ranks[2] = {0}, next[2] = {0};
  char* const abandon_argv[] = {TUTTI_TEST_BINARY_DIR "/tests/programs/coll_shared_memory", "abandon", NULL};
  char* const meet_argv[] = {TUTTI_TEST_BINARY_DIR "/tests/programs/rank_report", "--no-split", NULL};
  char env[2][4][64];
  int port = tt_free_port();
  char* const* env_add[2];
  char* vars[2][5];
  for (int rank = 0; rank < 2; ++rank) {
    snprintf(env[rank][0], sizeof env[rank][0], "TUTTI_RANK=%d", rank);
    snprintf(env[rank][1], sizeof env[rank][1], "TUTTI_WORLD_SIZE=2");
    snprintf(env[rank][2], sizeof env[rank][2], "TUTTI_ADDR=127.0.0.1:%d", port);
    snprintf(env[rank][3], sizeof env[rank][3], "TUTTI_INIT_TIMEOUT_MS=%d", tt_timeout_ms(20000));
    for (int i = 0; i < 4; ++i) vars[rank][i] = env[rank][i];
    vars[rank][4] = NULL;
    env_add[rank] = vars[rank];
  }
  for (int rank = 0; rank < 2; ++rank) cr_assert_eq(tt_spawn(&ranks[rank], abandon_argv, env_add[rank]), 0);
  int pid = ranks[0].pid;
  int ended = tt_wait(&ranks[0], tt_timeout_ms(30000));
  char* output = tt_output(&ranks[0]);
  cr_expect(ended && ranks[0].signaled == SIGKILL && strstr(output, "rank 0 dies with /dev/shm/tutti-"),
            "rank 0 did not die of its SIGKILL with its segment in /dev/shm:\n%s", output);
  free(output);
  tt_cleanup_all(ranks, 2);

  port = tt_free_port();
  for (int rank = 0; rank < 2; ++rank) {
    snprintf(env[rank][2], sizeof env[rank][2], "TUTTI_ADDR=127.0.0.1:%d", port);
    cr_assert_eq(tt_spawn(&next[rank], meet_argv, env_add[rank]), 0);
  }
  cr_expect_eq(tt_wait_all(next, 2, tt_timeout_ms(30000)), 2, "the next job did not end");
  for (int rank = 0; rank < 2; ++rank) {
    char* text = tt_output(&next[rank]);
    cr_expect(next[rank].exited && next[rank].exit_code == 0 && strstr(text, "PLACE"), "rank %d of the next job:\n%s",
              rank, text);
    free(text);
  }
  tt_cleanup_all(next, 2);
  cr_expect(!segment_of(pid), "the segment of pid %d (dead) is still in /dev/shm after the next job", pid);
}
