/* Wrong calls in real processes (coll_bad_input): invalid arguments are refused with a
 * message naming the function and the argument, and the communicator keeps working;
 * ranks that disagree on a field fail with TUTTI_ERR_MISMATCH naming the ranks and the
 * field under TUTTI_CHECK=1, and without it fail in bounded time without writing past
 * a buffer; a rank that never joins makes the others time out naming it; a bad
 * TUTTI_ALGO is refused naming the variable. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/launch_job.h"

static tt_job job;
static void teardown(void) { tt_job_cleanup(&job); }

TestSuite(bad_input, .fini = teardown);

static const char* const needles[] = {"FAIL",       "coll_bad_input:", "MISMATCH", "NEVER_JOINS",
                                      "FIRST_CALL", "tutti launch:",   "[tutti]",  NULL};

#define OP_TIMEOUT_MS 3000
/* How far past the op timeout a failing call may return: the timeout report reads the
 * other ranks' states from the store (bounded by 2 s), and CI machines are busy. */
#define BOUND_SLACK_MS 5000

static void start(int size, const char* case_name, const char* env1, const char* env2) {
  tt_job_cleanup(&job);
  tt_job_init(&job, size, tt_timeout_ms(60000) / 1000, "coll_bad_input");
  tt_job_arg(&job, "--case");
  tt_job_arg(&job, "%s", case_name);
  tt_job_env(&job, "TUTTI_OP_TIMEOUT_MS=%d", OP_TIMEOUT_MS);
  if (env1) tt_job_env(&job, "%s", env1);
  if (env2) tt_job_env(&job, "%s", env2);
}

static void finish(const char* what) {
  tt_job_run(&job, 70000);
  cr_assert(job.ended, "%s did not end: %s\n%s", what, tt_job_command(&job), tt_excerpt(job.output, needles));
  cr_expect_eq(tt_count(job.output, "FAIL"), 0, "%s: %s\n%s", what, tt_job_command(&job),
               tt_excerpt(job.output, needles));
  cr_expect_eq(job.process.exit_code, 0, "%s exited %d: %s\n%s", what, job.process.exit_code, tt_job_command(&job),
               tt_excerpt(job.output, needles));
}

/* message names rank r: r appears as a number of its own, not as part of another
 * number, an operation number ("#1") or a duration ("3.0 s"). */
static int names_rank(const char* message, int r) {
  for (const char* p = message; *p; ++p) {
    if (!isdigit((unsigned char)*p) || (p > message && (isdigit((unsigned char)p[-1]) || p[-1] == '#'))) continue;
    char* end = NULL;
    long value = strtol(p, &end, 10);
    int decimal = end[0] == '.' && isdigit((unsigned char)end[1]);
    if (value == r && !decimal) return 1;
    p = end - 1;
  }
  return 0;
}

/* ---- arguments ---------------------------------------------------------------------- */

Test(bad_input, invalid_arguments_are_refused_and_the_comm_keeps_working, .timeout = 150) {
  struct {
    int size;
    const char* env;
  } runs[] = {{1, NULL}, {3, NULL}, {3, "TUTTI_CHECK=1"}, {4, "TUTTI_ALGO=all_reduce=ring"}};
  for (int i = 0; i < 4; ++i) {
    start(runs[i].size, "arguments", runs[i].env, NULL);
    char what[96];
    snprintf(what, sizeof what, "arguments -n %d %s", runs[i].size, runs[i].env ? runs[i].env : "");
    finish(what);
    for (int rank = 0; rank < runs[i].size; ++rank) {
      char summary[96];
      snprintf(summary, sizeof summary, "[%d] coll_bad_input: rank %d case arguments, 0 failures\n", rank, rank);
      cr_expect(strstr(job.output, summary) != NULL, "%s: want \"%s\"", what, summary);
    }
    /* Every refusal is printed, its message starting with the function's name: 62 per
     * rank, 56 in a world of 1 (which skips the checks that need a peer). */
    int refusals = tt_count(job.output, "-> TUTTI_ERR_INVALID_ARGUMENT: tutti_");
    int per_rank = runs[i].size > 1 ? 62 : 56;
    cr_expect_eq(refusals, per_rank * runs[i].size, "%s: %d refusals with a message naming the function:\n%s", what,
                 refusals, tt_excerpt(job.output, needles));
    tt_job_cleanup(&job);
  }
}

/* ---- mismatch with the fingerprint check -------------------------------------------- */

static void expect_mismatch_named(int size, const char* field, const char* algorithms) {
  char field_arg[32];
  snprintf(field_arg, sizeof field_arg, "%s", field);
  start(size, "mismatch", "TUTTI_CHECK=1", algorithms);
  tt_job_arg(&job, "--field");
  tt_job_arg(&job, "%s", field_arg);
  char what[128];
  snprintf(what, sizeof what, "mismatch of %s -n %d TUTTI_CHECK=1 %s", field, size, algorithms ? algorithms : "");
  finish(what);
  for (int rank = 0; rank < size; ++rank) {
    char line[2048];
    cr_assert(tt_rank_line(job.output, rank, "MISMATCH status=", line, sizeof line), "%s: rank %d:\n%s", what, rank,
              tt_excerpt(job.output, needles));
    cr_expect(strncmp(line, "TUTTI_ERR_MISMATCH ", 19) == 0, "%s: rank %d: %s", what, rank, line);
    long long elapsed = atoll(strstr(line, "elapsed_ms=") + 11);
    cr_expect_lt(elapsed, OP_TIMEOUT_MS, "%s: rank %d took %lld ms: the check should fail fast", what, rank, elapsed);
    cr_expect(strstr(line, "guard=intact") != NULL, "%s: rank %d: %s", what, rank, line);
    const char* message = strstr(line, "message=\"");
    cr_assert(message != NULL);
    cr_expect(strstr(message, field) != NULL, "%s: rank %d: the message should name the field %s: %s", what, rank,
              field, message);
    cr_expect(names_rank(message, size - 1), "%s: rank %d: the message should name rank %d: %s", what, rank, size - 1,
              message);
  }
  tt_job_cleanup(&job);
}

Test(bad_input, mismatch_with_check_names_the_ranks_and_the_field, .timeout = 150) {
  expect_mismatch_named(3, "count", NULL);
  expect_mismatch_named(3, "dtype", NULL);
  expect_mismatch_named(3, "op", NULL);
  expect_mismatch_named(3, "root", NULL);
  expect_mismatch_named(4, "count", "TUTTI_ALGO=all_reduce=ring");
  expect_mismatch_named(2, "count", "TUTTI_ALGO=all_reduce=recursive_doubling");
}

/* ---- mismatch without it: an error in bounded time, never a write past the buffer -- */

/* Every rank fails (MISMATCH, or TIMEOUT waiting for one that did) within the bound and
 * writes nothing past its buffer; with at_least_one_mismatch, some rank says MISMATCH
 * and a rank that timed out names the ranks that failed. */
static void expect_mismatch_fails(int size, const char* algorithms, const char* field, const char* count,
                                  int at_least_one_mismatch) {
  start(size, "mismatch", algorithms, "TUTTI_HEARTBEAT_INTERVAL_MS=200");
  tt_job_arg(&job, "--field");
  tt_job_arg(&job, "%s", field);
  tt_job_arg(&job, "--count");
  tt_job_arg(&job, "%s", count);
  char what[128];
  snprintf(what, sizeof what, "%s mismatch -n %d --count %s %s", field, size, count, algorithms ? algorithms : "");
  finish(what);
  int mismatches = 0;
  for (int rank = 0; rank < size; ++rank) {
    char line[2048];
    cr_assert(tt_rank_line(job.output, rank, "MISMATCH status=", line, sizeof line), "%s: rank %d:\n%s", what, rank,
              tt_excerpt(job.output, needles));
    int failed = strncmp(line, "TUTTI_ERR_MISMATCH ", 19) == 0 || strncmp(line, "TUTTI_ERR_TIMEOUT ", 18) == 0;
    cr_expect(failed, "%s: rank %d: want TUTTI_ERR_MISMATCH or TUTTI_ERR_TIMEOUT: %s", what, rank, line);
    long long elapsed = atoll(strstr(line, "elapsed_ms=") + 11);
    cr_expect_leq(elapsed, OP_TIMEOUT_MS + BOUND_SLACK_MS, "%s: rank %d returned after %lld ms", what, rank, elapsed);
    cr_expect(strstr(line, "guard=intact") != NULL, "%s: rank %d: %s", what, rank, line);
    mismatches += strncmp(line, "TUTTI_ERR_MISMATCH ", 19) == 0;
    if (at_least_one_mismatch && strncmp(line, "TUTTI_ERR_TIMEOUT ", 18) == 0) {
      /* "ranks 1 (MISMATCH) failed it", or, when another rank timed out first too,
       * "ranks 1 (MISMATCH), 2 (TIMEOUT) failed it": either way the mismatch is named. */
      const char* failed_it = strstr(line, " failed it");
      const char* named = strstr(line, "(MISMATCH)");
      cr_expect(failed_it != NULL && named != NULL && named < failed_it,
                "%s: rank %d does not name the ranks that failed: %s", what, rank, line);
    }
  }
  if (at_least_one_mismatch)
    cr_expect(mismatches > 0, "%s: no rank said MISMATCH\n%s", what, tt_excerpt(job.output, needles));
  tt_job_cleanup(&job);
}

static void expect_count_mismatch_fails(int size, const char* algorithms, const char* count) {
  expect_mismatch_fails(size, algorithms, "count", count, 0);
}

/* Same-size buffers, another dtype or op: only the call fingerprint that every message
 * carries (Tag::check) can tell, and it does without TUTTI_CHECK. */
Test(bad_input, dtype_or_op_mismatch_without_check_is_a_mismatch, .timeout = 150) {
  expect_mismatch_fails(3, "TUTTI_ALGO=all_reduce=ring", "dtype", "1000", 1);
  expect_mismatch_fails(3, "TUTTI_ALGO=all_reduce=recursive_doubling", "op", "1000", 1);
  expect_mismatch_fails(3, NULL, "dtype", "1000", 1);
  expect_mismatch_fails(3, NULL, "op", "1000", 1);
}

Test(bad_input, count_mismatch_without_check_fails_in_bounded_time, .timeout = 150) {
  expect_count_mismatch_fails(4, "TUTTI_ALGO=all_reduce=ring", "1000");
  expect_count_mismatch_fails(4, "TUTTI_ALGO=all_reduce=ring", "100000");
  expect_count_mismatch_fails(3, "TUTTI_ALGO=all_reduce=recursive_doubling", "1000");
}

/* The same through shared memory, which the selector picks for ranks on one node. */
Test(bad_input, count_mismatch_without_check_fails_in_bounded_time_over_shm, .timeout = 150) {
  expect_count_mismatch_fails(2, NULL, "1000");
  expect_count_mismatch_fails(4, NULL, "1000");
  expect_count_mismatch_fails(3, "TUTTI_ALGO=all_reduce=shm", "100000");
}

/* ---- a rank that never joins -------------------------------------------------------- */

static void expect_timeout_naming(int size, const char* absent, unsigned absent_bits, const char* algorithms) {
  start(size, "never_joins", algorithms, NULL);
  tt_job_arg(&job, "--absent");
  tt_job_arg(&job, "%s", absent);
  char what[128];
  snprintf(what, sizeof what, "never_joins -n %d --absent %s %s", size, absent, algorithms ? algorithms : "");
  finish(what);
  for (int rank = 0; rank < size; ++rank) {
    if (absent_bits & (1u << rank)) continue;
    char line[2048];
    cr_assert(tt_rank_line(job.output, rank, "NEVER_JOINS status=", line, sizeof line), "%s: rank %d:\n%s", what, rank,
              tt_excerpt(job.output, needles));
    cr_expect(strncmp(line, "TUTTI_ERR_TIMEOUT ", 18) == 0, "%s: rank %d: %s", what, rank, line);
    long long elapsed = atoll(strstr(line, "elapsed_ms=") + 11);
    cr_expect(elapsed >= OP_TIMEOUT_MS - 100 && elapsed <= OP_TIMEOUT_MS + BOUND_SLACK_MS,
              "%s: rank %d timed out after %lld ms with an op timeout of %d ms", what, rank, elapsed, OP_TIMEOUT_MS);
    const char* message = strstr(line, "message=\"");
    cr_assert(message != NULL);
    for (int r = 0; r < size; ++r) {
      if (absent_bits & (1u << r)) {
        cr_expect(names_rank(message, r), "%s: rank %d: the message should name rank %d: %s", what, rank, r, message);
      }
    }
  }
  tt_job_cleanup(&job);
}

Test(bad_input, rank_that_never_joins_is_named_in_the_timeout, .timeout = 150) {
  expect_timeout_naming(4, "3", 1u << 3, NULL);
  expect_timeout_naming(5, "1,4", (1u << 1) | (1u << 4), NULL);
  expect_timeout_naming(4, "0", 1u << 0, "TUTTI_ALGO=all_reduce=ring");
  expect_timeout_naming(3, "2", 1u << 2, "TUTTI_ALGO=all_reduce=recursive_doubling");
}

/* ---- a bad TUTTI_ALGO or TUTTI_CPU_PER_RANK --------------------------------------------- */

/* Every rank's first call fails with INVALID_ARGUMENT naming the variable of `value`
 * ("NAME=...") and `fragment`; on one node too, where TUTTI_CPU_PER_RANK has no
 * hierarchy to decide. */
static void expect_setting_refused(const char* value, const char* fragment) {
  char variable[64];
  snprintf(variable, sizeof variable, "%.*s", (int)strcspn(value, "="), value);
  start(2, "first_call", value, NULL);
  finish(value);
  for (int rank = 0; rank < 2; ++rank) {
    char line[2048];
    cr_assert(tt_rank_line(job.output, rank, "FIRST_CALL ", line, sizeof line), "%s: rank %d:\n%s", value, rank,
              tt_excerpt(job.output, needles));
    cr_expect(strstr(line, "TUTTI_ERR_INVALID_ARGUMENT") != NULL, "%s: rank %d: %s", value, rank, line);
    cr_expect(strstr(line, variable) != NULL && strstr(line, fragment) != NULL,
              "%s: rank %d: the message should name %s and \"%s\": %s", value, rank, variable, fragment, line);
  }
  tt_job_cleanup(&job);
}

Test(bad_input, bad_algorithm_choice_is_refused_naming_the_variable, .timeout = 60) {
  expect_setting_refused("TUTTI_ALGO=all_reduce=bogus", "bogus");
  expect_setting_refused("TUTTI_ALGO=frobnicate=ring", "frobnicate");
  expect_setting_refused("TUTTI_ALGO=all_reduce", "all_reduce");
}

Test(bad_input, bad_cpu_per_rank_is_refused_naming_the_variable, .timeout = 60) {
  expect_setting_refused("TUTTI_CPU_PER_RANK=always", "is not auto, yes or no");
}
