/* Work objects and point-to-point messages in real processes (coll_async): progress in
 * the background while the caller computes, several operations outstanding and
 * completing in order, wait with a timeout that expires and then succeeds, polling
 * with tutti_work_test, isend/irecv both ways without deadlock, tags, and a receive
 * smaller than its message. The program checks values and timings itself; these tests
 * check that every rank ran its case to the end with no failure, and what it printed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/launch_job.h"

static tt_job job;
static void teardown(void) { tt_job_cleanup(&job); }

TestSuite(work, .fini = teardown);

static const char* const needles[] = {"FAIL", "coll_async:", "tutti launch:", "[tutti]", NULL};

/* Runs `coll_async --case name` on size ranks with an optional TUTTI_ALGO; asserts a
 * clean exit and each rank's summary with 0 failures. */
static void run_case(const char* name, int size, const char* algorithms) {
  tt_job_cleanup(&job);
  tt_job_init(&job, size, tt_timeout_ms(60000) / 1000, "coll_async");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "%s", name);
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=20000");
  if (algorithms) tt_job_env(&job, "TUTTI_ALGO=%s", algorithms);
  tt_job_run(&job, 70000);
  cr_assert(job.ended, "%s did not end: %s\n%s", name, tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "%s -n %d: %s\n%s", name, size, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  cr_expect_eq(job.process.exit_code, 0, "%s -n %d exited %d: %s\n%s", name, size, job.process.exit_code,
               tt_job_command(&job), tt_excerpt(job.output, needles));
  for (int rank = 0; rank < size; ++rank) {
    char expected[128];
    snprintf(expected, sizeof expected, "[%d] coll_async: rank %d case %s, 0 failures\n", rank, rank, name);
    cr_expect(strstr(job.output, expected) != NULL, "%s -n %d: want \"%s\":\n%s", name, size, expected,
              tt_excerpt(job.output, needles));
  }
}

/* The value of "key=" in rank's line starting with prefix, or -1. */
static long long value_in_line(int rank, const char* prefix, const char* key) {
  char line[1024];
  if (!tt_rank_line(job.output, rank, prefix, line, sizeof line)) return -1;
  char pattern[64];
  snprintf(pattern, sizeof pattern, "%s=", key);
  const char* at = strstr(line, pattern);
  return at ? atoll(at + strlen(pattern)) : -1;
}

#define RING_SET \
  "all_reduce=ring,broadcast=binomial,all_gather=ring,reduce_scatter=ring,all_to_all=pairwise,reduce=binomial"

Test(work, async_all_reduce_progresses_while_the_caller_computes, .timeout = 120) {
  int sizes[] = {2, 4};
  for (int i = 0; i < 2; ++i) {
    run_case("overlap", sizes[i], i == 0 ? NULL : "all_reduce=ring");
    for (int rank = 0; rank < sizes[i]; ++rank) {
      cr_expect_eq(value_in_line(rank, "OVERLAP ", "done_before_wait"), 1, "rank %d:\n%s", rank,
                   tt_excerpt(job.output, needles));
      long long issue_ms = value_in_line(rank, "OVERLAP ", "issue_ms");
      cr_expect(issue_ms >= 0 && issue_ms < 500, "rank %d: issuing took %lld ms; it should return at once", rank,
                issue_ms);
    }
    tt_job_cleanup(&job);
  }
}

Test(work, outstanding_operations_complete_in_order, .timeout = 120) {
  run_case("in_order", 3, NULL);
  tt_job_cleanup(&job);
  run_case("in_order", 4, RING_SET);
  for (int rank = 0; rank < 4; ++rank) {
    cr_expect_eq(value_in_line(rank, "IN_ORDER ", "violations"), 0, "rank %d", rank);
    cr_expect_gt(value_in_line(rank, "IN_ORDER ", "polls"), 0, "rank %d", rank);
  }
}

Test(work, wait_with_a_short_timeout_expires_then_succeeds, .timeout = 120) {
  int sizes[] = {2, 3};
  for (int i = 0; i < 2; ++i) {
    run_case("wait_timeout", sizes[i], i == 0 ? NULL : "all_reduce=recursive_doubling");
    for (int rank = 0; rank < sizes[i] - 1; ++rank) {
      char line[1024];
      cr_assert(tt_rank_line(job.output, rank, "WAIT_TIMEOUT zero=", line, sizeof line), "rank %d:\n%s", rank,
                job.output);
      /* The line after "zero=": both waits ran out on their own time, not the operation's. */
      cr_expect(strncmp(line, "TUTTI_INPROGRESS ", 17) == 0 && strstr(line, "first=TUTTI_INPROGRESS") != NULL,
                "rank %d: %s", rank, line);
      cr_expect(strstr(line, "done=0") != NULL, "rank %d: %s", rank, line);
      long long first_ms = value_in_line(rank, "WAIT_TIMEOUT zero=", "first_ms");
      cr_expect(first_ms >= 45 && first_ms <= 1000, "rank %d: wait(50) took %lld ms", rank, first_ms);
    }
    for (int rank = 0; rank < sizes[i]; ++rank) {
      char line[256];
      cr_assert(tt_rank_line(job.output, rank, "WAIT_TIMEOUT second=", line, sizeof line));
      cr_expect(strncmp(line, "TUTTI_OK", 8) == 0, "rank %d: the second wait: %s", rank, line);
    }
    tt_job_cleanup(&job);
  }
}

Test(work, test_polls_until_done, .timeout = 120) {
  run_case("test_poll", 2, NULL);
  tt_job_cleanup(&job);
  run_case("test_poll", 4, "all_reduce=ring");
  for (int rank = 0; rank < 3; ++rank) {
    cr_expect_gt(value_in_line(rank, "TEST_POLL ", "polls"), 1, "rank %d polled once only; the last rank was late",
                 rank);
  }
}

Test(work, point_to_point_both_ways_with_tags, .timeout = 120) {
  run_case("p2p", 2, NULL);
  cr_expect_eq(tt_count(job.output, "P2P done\n"), 2, "%s", tt_excerpt(job.output, needles));
}

Test(work, receive_smaller_than_the_message_is_refused, .timeout = 120) {
  run_case("p2p_too_small", 2, NULL);
  char line[1024];
  cr_assert(tt_rank_line(job.output, 1, "TOO_SMALL recv=", line, sizeof line), "%s", job.output);
  cr_expect(strncmp(line, "TUTTI_ERR_INVALID_ARGUMENT guard=intact", 39) == 0, "receiver: %s", line);
  cr_assert(tt_rank_line(job.output, 0, "TOO_SMALL send=", line, sizeof line), "%s", job.output);
  printf("the sender of the too-long message got: %s\n", line);
  for (int rank = 0; rank < 2; ++rank) {
    cr_assert(tt_rank_line(job.output, rank, "TOO_SMALL all_reduce_after=", line, sizeof line));
    cr_expect_str_eq(line, "TUTTI_OK", "rank %d: the all_reduce after the refused receive", rank);
  }
}

Test(work, an_unanswered_irecv_times_out_with_the_op_timeout, .timeout = 120) {
  run_case("irecv_unanswered", 2, NULL);
  char line[1024];
  cr_assert(tt_rank_line(job.output, 1, "IRECV_UNANSWERED wait=", line, sizeof line), "%s", job.output);
  cr_expect(strncmp(line, "TUTTI_ERR_TIMEOUT", 17) == 0, "the wait(-1) on the irecv: %s", line);
  cr_expect(strstr(line, "names_peer=1") != NULL, "%s", tt_excerpt(job.output, needles));
  long long waited = value_in_line(1, "IRECV_UNANSWERED wait=", "waited_ms");
  cr_expect(waited >= 400 && waited < 10000, "the irecv timed out after %lld ms; its op timeout is 500 ms", waited);
  cr_expect_eq(tt_count(job.output, "IRECV_UNANSWERED done\n"), 2, "%s", tt_excerpt(job.output, needles));
}

Test(work, isend_keeps_moving_while_a_blocking_collective_waits, .timeout = 120) {
  run_case("isend_then_blocking", 2, NULL);
  cr_expect_eq(tt_count(job.output, "ISEND_THEN_BLOCKING done\n"), 2, "%s", tt_excerpt(job.output, needles));
  tt_job_cleanup(&job);
  run_case("isend_then_blocking", 2, "barrier=dissemination");
  cr_expect_eq(tt_count(job.output, "ISEND_THEN_BLOCKING done\n"), 2, "%s", tt_excerpt(job.output, needles));
}

/* A large irecv moves while its rank computes without a call (the executor's thread,
 * poked by the post, moves it): the sender's wait does not wait for the computation. */
Test(work, irecv_moves_while_its_rank_computes, .timeout = 120) {
  run_case("irecv_while_computing", 2, NULL);
  cr_expect_eq(tt_count(job.output, "IRECV_WHILE_COMPUTING done\n"), 2, "%s", tt_excerpt(job.output, needles));
}
