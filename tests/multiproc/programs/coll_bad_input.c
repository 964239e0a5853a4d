/* coll_bad_input: wrong calls, for test_bad_input.c. Each must fail cleanly, say what
 * was wrong, and leave the communicator working.
 *
 *   coll_bad_input --case arguments
 *       NULL buffers with count > 0, an unknown dtype or op, roots and peers out of
 *       range, negative tags, overlaps that are not an allowed in-place form, a NULL
 *       comm, NULL and released work: each must return TUTTI_ERR_INVALID_ARGUMENT
 *       with a tutti_last_error() that names the function and the argument, and a
 *       correct all_reduce must follow. Prints "INVALID <what> -> <status>: <message>".
 *   coll_bad_input --case mismatch --field count|dtype|op|root [--count N]
 *       the last rank disagrees on one field of an all_reduce (a broadcast for root).
 *       Prints "MISMATCH status=S elapsed_ms=T guard=intact|written message=\"...\"";
 *       the test decides what S must be (with and without TUTTI_CHECK=1). Then stays
 *       until 1 s past TUTTI_OP_TIMEOUT_MS, so that no rank sees another leave.
 *   coll_bad_input --case never_joins --absent LIST
 *       the listed ranks never call the all_reduce: they sleep 2.5 s past
 *       TUTTI_OP_TIMEOUT_MS, then leave. The others print
 *       "NEVER_JOINS status=S elapsed_ms=T message=\"...\"".
 *   coll_bad_input --case first_call
 *       init, then one all_reduce; prints "FIRST_CALL init=S call=S message=\"...\""
 *       (for a bad TUTTI_ALGO).
 *
 * Prints "FAIL rank R <case>: ..." for each failed check and
 * "coll_bad_input: rank R case NAME, F failures"; exits 1 if F > 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_values.h"
#include "tutti.h"

static tutti_comm* comm;
static int rank, size, failures;
static const char* case_name = "";
static uint64_t next_id = 1;

__attribute__((format(printf, 1, 2))) static void fail(const char* format, ...) {
  char what[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  printf("FAIL rank %d %s: %s\n", rank, case_name, what);
  ++failures;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A correct all_reduce, to show the communicator still works after `after`. */
static void still_works(const char* after) {
  uint64_t id = next_id++;
  int32_t send[3], recv[3];
  for (int i = 0; i < 3; ++i) send[i] = (int32_t)cv_input(TUTTI_DTYPE_INT32, TUTTI_OP_SUM, id, rank, (uint64_t)i).i;
  tutti_status status = tutti_all_reduce(comm, send, recv, 3, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL);
  if (status != TUTTI_OK) {
    fail("the all_reduce after %s returned %s: %s", after, tutti_status_name(status), tutti_last_error());
    return;
  }
  for (int i = 0; i < 3; ++i) {
    cv_accumulator acc;
    cv_acc_init(&acc, TUTTI_DTYPE_INT32, TUTTI_OP_SUM);
    for (int r = 0; r < size; ++r) cv_acc_add(&acc, cv_input(TUTTI_DTYPE_INT32, TUTTI_OP_SUM, id, r, (uint64_t)i));
    double tolerance;
    int64_t want = cv_acc_result(&acc, &tolerance).i;
    if (recv[i] != want) {
      fail("the all_reduce after %s: index %d expected %lld got %d", after, i, (long long)want, recv[i]);
      return;
    }
  }
}

/* message contains one of the '|'-separated words in alternatives. */
static int names_one_of(const char* message, const char* alternatives) {
  char copy[128];
  snprintf(copy, sizeof copy, "%s", alternatives);
  char* save = NULL;
  for (char* word = strtok_r(copy, "|", &save); word; word = strtok_r(NULL, "|", &save)) {
    if (strstr(message, word) != NULL) return 1;
  }
  return 0;
}

/* status must be INVALID_ARGUMENT and the message must name the function and the
 * argument (argument: words separated by '|', any of which names it). */
static void expect_invalid(const char* what, tutti_status status, const char* function, const char* argument) {
  const char* message = status == TUTTI_OK ? "" : tutti_last_error();
  printf("INVALID %s -> %s: %s\n", what, tutti_status_name(status), message);
  if (status != TUTTI_ERR_INVALID_ARGUMENT) {
    fail("%s returned %s; want TUTTI_ERR_INVALID_ARGUMENT", what, tutti_status_name(status));
  } else if (message[0] == '\0') {
    fail("%s: tutti_last_error() is empty", what);
  } else if (strstr(message, function) == NULL) {
    fail("%s: the message does not name %s: \"%s\"", what, function, message);
  } else if (!names_one_of(message, argument)) {
    fail("%s: the message does not name the argument \"%s\": \"%s\"", what, argument, message);
  }
  still_works(what);
}

/* expect_invalid for a bad call made straight after a good one (whose status is good). */
static void invalid_after_good(tutti_status good, const char* what, tutti_status bad, const char* function,
                               const char* argument) {
  if (good != TUTTI_OK) fail("%s: the good call returned %s", what, tutti_status_name(good));
  expect_invalid(what, bad, function, argument);
}

/* ---- arguments ---------------------------------------------------------------------- */

static void case_arguments(void) {
  enum { N = 4 };
  const tutti_dtype i32 = TUTTI_DTYPE_INT32;
  const tutti_op sum = TUTTI_OP_SUM;
  /* Room for size * N elements and some slack, so that no overlap below leaves it. */
  size_t room = (size_t)size * N + 16;
  int32_t* a = calloc(room, 4);
  int32_t* b = calloc(room, 4);
  int peer = (rank + 1) % size;

  /* NULL buffers that every rank would use, with count > 0. */
  expect_invalid("all_reduce send=NULL", tutti_all_reduce(comm, NULL, b, N, i32, sum, NULL), "tutti_all_reduce",
                 "send");
  expect_invalid("all_reduce recv=NULL", tutti_all_reduce(comm, a, NULL, N, i32, sum, NULL), "tutti_all_reduce",
                 "recv|receive");
  expect_invalid("reduce send=NULL", tutti_reduce(comm, NULL, b, N, i32, sum, 0, NULL), "tutti_reduce", "send");
  expect_invalid("broadcast recv=NULL", tutti_broadcast(comm, a, NULL, N, i32, 0, NULL), "tutti_broadcast",
                 "recv|receive");
  expect_invalid("all_gather send=NULL", tutti_all_gather(comm, NULL, b, N, i32, NULL), "tutti_all_gather", "send");
  expect_invalid("all_gather recv=NULL", tutti_all_gather(comm, a, NULL, N, i32, NULL), "tutti_all_gather",
                 "recv|receive");
  expect_invalid("reduce_scatter send=NULL", tutti_reduce_scatter(comm, NULL, b, N, i32, sum, NULL),
                 "tutti_reduce_scatter", "send");
  expect_invalid("reduce_scatter recv=NULL", tutti_reduce_scatter(comm, a, NULL, N, i32, sum, NULL),
                 "tutti_reduce_scatter", "recv|receive");
  expect_invalid("gather send=NULL", tutti_gather(comm, NULL, b, N, i32, 0, NULL), "tutti_gather", "send");
  expect_invalid("scatter recv=NULL", tutti_scatter(comm, a, NULL, N, i32, 0, NULL), "tutti_scatter", "recv|receive");
  expect_invalid("all_to_all send=NULL", tutti_all_to_all(comm, NULL, b, N, i32, NULL), "tutti_all_to_all", "send");
  expect_invalid("all_to_all recv=NULL", tutti_all_to_all(comm, a, NULL, N, i32, NULL), "tutti_all_to_all",
                 "recv|receive");

  /* Unknown dtypes and ops. */
  const tutti_dtype bad_dtype = (tutti_dtype)99;
  expect_invalid("all_reduce dtype=99", tutti_all_reduce(comm, a, b, N, bad_dtype, sum, NULL), "tutti_all_reduce",
                 "dtype");
  expect_invalid("broadcast dtype=99", tutti_broadcast(comm, a, b, N, bad_dtype, 0, NULL), "tutti_broadcast", "dtype");
  expect_invalid("all_to_all dtype=-1", tutti_all_to_all(comm, a, b, N, (tutti_dtype)-1, NULL), "tutti_all_to_all",
                 "dtype");
  expect_invalid("all_reduce op=99", tutti_all_reduce(comm, a, b, N, i32, (tutti_op)99, NULL), "tutti_all_reduce",
                 "op");
  expect_invalid("reduce op=-1", tutti_reduce(comm, a, b, N, i32, (tutti_op)-1, 0, NULL), "tutti_reduce", "op");
  expect_invalid("reduce_scatter op=5", tutti_reduce_scatter(comm, a, b, N, i32, (tutti_op)5, NULL),
                 "tutti_reduce_scatter", "op");

  /* Roots out of range. */
  int bad_roots[2] = {-1, size};
  for (int i = 0; i < 2; ++i) {
    char what[64];
    int root = bad_roots[i];
    snprintf(what, sizeof what, "reduce root=%d", root);
    expect_invalid(what, tutti_reduce(comm, a, b, N, i32, sum, root, NULL), "tutti_reduce", "root");
    snprintf(what, sizeof what, "broadcast root=%d", root);
    expect_invalid(what, tutti_broadcast(comm, a, b, N, i32, root, NULL), "tutti_broadcast", "root");
    snprintf(what, sizeof what, "gather root=%d", root);
    expect_invalid(what, tutti_gather(comm, a, b, N, i32, root, NULL), "tutti_gather", "root");
    snprintf(what, sizeof what, "scatter root=%d", root);
    expect_invalid(what, tutti_scatter(comm, a, b, N, i32, root, NULL), "tutti_scatter", "root");
  }

  /* Overlaps that are not the in-place form, on every rank. */
  expect_invalid("all_reduce recv=send+1", tutti_all_reduce(comm, a, a + 1, N, i32, sum, NULL), "tutti_all_reduce",
                 "recv|receive");
  expect_invalid("all_gather send=recv+(rank*count+1)",
                 tutti_all_gather(comm, b + (size_t)rank * N + 1, b, N, i32, NULL), "tutti_all_gather", "recv|receive");
  expect_invalid("reduce_scatter recv=send+(rank*count+1)",
                 tutti_reduce_scatter(comm, a, a + (size_t)rank * N + 1, N, i32, sum, NULL), "tutti_reduce_scatter",
                 "recv|receive");
  expect_invalid("all_to_all recv=send+1", tutti_all_to_all(comm, a, a + 1, N, i32, NULL), "tutti_all_to_all",
                 "recv|receive");

  /* Each again straight after the same call made right: a call that repeats one of the
   * last few is not checked again (plan_for, runtime/collectives/engine.h), so one that
   * differs from it in a single argument must be. */
  tutti_status good = tutti_all_reduce(comm, a, b, N, i32, sum, NULL);
  invalid_after_good(good, "all_reduce recv=send+1 after a good one",
                     tutti_all_reduce(comm, a, a + 1, N, i32, sum, NULL), "tutti_all_reduce", "recv|receive");
  good = tutti_all_reduce(comm, a, b, N, i32, sum, NULL);
  invalid_after_good(good, "all_reduce send=NULL after a good one", tutti_all_reduce(comm, NULL, b, N, i32, sum, NULL),
                     "tutti_all_reduce", "send");
  good = tutti_all_reduce(comm, a, b, N, i32, sum, NULL);
  invalid_after_good(good, "all_reduce dtype=99 after a good one",
                     tutti_all_reduce(comm, a, b, N, bad_dtype, sum, NULL), "tutti_all_reduce", "dtype");
  good = tutti_all_reduce(comm, a, b, N, i32, sum, NULL);
  invalid_after_good(good, "all_reduce op=99 after a good one",
                     tutti_all_reduce(comm, a, b, N, i32, (tutti_op)99, NULL), "tutti_all_reduce", "op");
  good = tutti_broadcast(comm, a, b, N, i32, 0, NULL);
  invalid_after_good(good, "broadcast root=size after a good one", tutti_broadcast(comm, a, b, N, i32, size, NULL),
                     "tutti_broadcast", "root");
  /* The same with other calls in between, whose plans are kept too: the bad call is
   * compared with each of them, and differs from the one of its shape in one field. */
  good = tutti_all_reduce(comm, a, b, N, i32, sum, NULL);
  if (good == TUTTI_OK) good = tutti_broadcast(comm, a, b, N, i32, size - 1, NULL);
  if (good == TUTTI_OK) good = tutti_all_gather(comm, a, b, N, i32, NULL);
  invalid_after_good(good, "all_reduce recv=send+1 after good calls of three kinds",
                     tutti_all_reduce(comm, a, a + 1, N, i32, sum, NULL), "tutti_all_reduce", "recv|receive");
  good = tutti_broadcast(comm, a, b, N, i32, 0, NULL);
  if (good == TUTTI_OK) good = tutti_all_reduce(comm, a, b, N, i32, sum, NULL);
  invalid_after_good(good, "broadcast root=-1 after a good one and an all_reduce",
                     tutti_broadcast(comm, a, b, N, i32, -1, NULL), "tutti_broadcast", "root");

  /* all_to_allv: its count and offset arrays, blocks that overlap, a block past the
   * address space. Blocks of N elements for every peer, packed unless said. */
  size_t* counts = calloc((size_t)size, sizeof(size_t));
  size_t* expected = calloc((size_t)size, sizeof(size_t));
  size_t* offsets = calloc((size_t)size, sizeof(size_t));
  for (int r = 0; r < size; ++r) {
    counts[r] = expected[r] = N;
    offsets[r] = (size_t)r * N;
  }
  expect_invalid("all_to_allv send_counts=NULL", tutti_all_to_allv(comm, a, NULL, NULL, b, counts, NULL, i32, NULL),
                 "tutti_all_to_allv", "send_counts");
  expect_invalid("all_to_allv recv_counts=NULL", tutti_all_to_allv(comm, a, counts, NULL, b, NULL, NULL, i32, NULL),
                 "tutti_all_to_allv", "recv_counts");
  expect_invalid("all_to_allv send=NULL", tutti_all_to_allv(comm, NULL, counts, NULL, b, counts, NULL, i32, NULL),
                 "tutti_all_to_allv", "send");
  expect_invalid("all_to_allv recv=send+1", tutti_all_to_allv(comm, a, counts, NULL, a + 1, counts, NULL, i32, NULL),
                 "tutti_all_to_allv", "in-place");
  expect_invalid("all_to_allv dtype=99", tutti_all_to_allv(comm, a, counts, NULL, b, counts, NULL, bad_dtype, NULL),
                 "tutti_all_to_allv", "dtype");
  if (size > 1) {
    /* The last peer's receive block starts inside the one before it. */
    offsets[size - 1] = offsets[size - 2] + 1;
    expect_invalid("all_to_allv receive blocks overlap",
                   tutti_all_to_allv(comm, a, counts, NULL, b, counts, offsets, i32, NULL), "tutti_all_to_allv",
                   "recv_offsets");
    offsets[size - 1] = (size_t)(size - 1) * N;
  }
  offsets[rank] = SIZE_MAX - 1;
  expect_invalid("all_to_allv offset past the address space",
                 tutti_all_to_allv(comm, a, counts, offsets, b, counts, NULL, i32, NULL), "tutti_all_to_allv",
                 "overflows");
  offsets[rank] = (size_t)rank * N;
  counts[rank] = N + 1;
  expect_invalid("all_to_allv send_counts[rank] != recv_counts[rank]",
                 tutti_all_to_allv(comm, a, counts, NULL, b, expected, NULL, i32, NULL), "tutti_all_to_allv",
                 "recv_counts");
  free(counts);
  free(expected);
  free(offsets);
  expect_invalid("all_to_allv comm=NULL", tutti_all_to_allv(NULL, a, NULL, NULL, b, NULL, NULL, i32, NULL),
                 "tutti_all_to_allv", "comm");

  /* Point to point: NULL buffers, peers out of range, negative tags. */
  if (size > 1) {
    expect_invalid("send send=NULL", tutti_send(comm, NULL, N, i32, peer, 0, NULL), "tutti_send", "send");
    expect_invalid("recv recv=NULL", tutti_recv(comm, NULL, N, i32, peer, 0, NULL), "tutti_recv", "recv|receive");
    expect_invalid("send dtype=99", tutti_send(comm, a, N, bad_dtype, peer, 0, NULL), "tutti_send", "dtype");
    expect_invalid("send tag=-1", tutti_send(comm, a, N, i32, peer, -1, NULL), "tutti_send", "tag");
    expect_invalid("recv tag=-1", tutti_recv(comm, b, N, i32, peer, -1, NULL), "tutti_recv", "tag");
  }
  expect_invalid("send peer=-1", tutti_send(comm, a, N, i32, -1, 0, NULL), "tutti_send", "peer");
  expect_invalid("recv peer=size", tutti_recv(comm, b, N, i32, size, 0, NULL), "tutti_recv", "peer");

  /* A NULL communicator. */
  expect_invalid("all_reduce comm=NULL", tutti_all_reduce(NULL, a, b, N, i32, sum, NULL), "tutti_all_reduce", "comm");
  expect_invalid("barrier comm=NULL", tutti_barrier(NULL, NULL), "tutti_barrier", "comm");
  expect_invalid("send comm=NULL", tutti_send(NULL, a, N, i32, 0, 0, NULL), "tutti_send", "comm");

  /* NULL and released work. */
  int done = 0;
  expect_invalid("work_wait(NULL)", tutti_work_wait(NULL, 100), "tutti_work_wait", "work");
  expect_invalid("work_test(NULL)", tutti_work_test(NULL, &done), "tutti_work_test", "work");
  tutti_work* work = NULL;
  tutti_status status = tutti_all_reduce(comm, a, b, N, i32, sum, &work);
  if (status != TUTTI_OK || work == NULL) {
    fail("a correct async all_reduce returned %s: %s", tutti_status_name(status), tutti_last_error());
  } else {
    expect_invalid("work_test(work, done=NULL)", tutti_work_test(work, NULL), "tutti_work_test", "done");
    status = tutti_work_wait(work, -1);
    if (status != TUTTI_OK) fail("wait: %s: %s", tutti_status_name(status), tutti_last_error());
    status = tutti_work_release(work);
    if (status != TUTTI_OK) fail("release: %s: %s", tutti_status_name(status), tutti_last_error());
    /* Best effort by contract (the memory is freed); the tag check must catch it. */
    expect_invalid("work_wait after release", tutti_work_wait(work, 100), "tutti_work_wait", "work");
    expect_invalid("work_test after release", tutti_work_test(work, &done), "tutti_work_test", "work");
    expect_invalid("work_release twice", tutti_work_release(work), "tutti_work_release", "work");
  }
  if (tutti_work_release(NULL) != TUTTI_OK) fail("tutti_work_release(NULL) should be accepted");
  free(a);
  free(b);
}

/* ---- mismatch ----------------------------------------------------------------------- */

static void case_mismatch(const char* field, size_t count) {
  int odd = rank == size - 1;
  tutti_dtype dtype = TUTTI_DTYPE_INT32;
  tutti_op op = TUTTI_OP_SUM;
  int root = 0;
  size_t my_count = count;
  if (strcmp(field, "count") == 0) {
    if (odd) my_count = count + 3;
  } else if (strcmp(field, "dtype") == 0) {
    if (odd) dtype = TUTTI_DTYPE_FLOAT32;
  } else if (strcmp(field, "op") == 0) {
    if (odd) op = TUTTI_OP_MAX;
  } else if (strcmp(field, "root") == 0) {
    if (odd) root = size - 1;
  } else {
    fail("unknown --field %s", field);
    return;
  }
  /* The receive buffer holds exactly this rank's count, then a guard of 256 bytes. */
  const size_t guard = 256;
  size_t bytes = my_count * 4;
  unsigned char* send = malloc(bytes + 1);
  unsigned char* recv = malloc(bytes + guard);
  memset(send, 1, bytes + 1);
  memset(recv + bytes, 0xA5, guard);
  long long t0 = now_ms();
  tutti_status status = strcmp(field, "root") == 0
                            ? tutti_broadcast(comm, rank == root ? send : NULL, recv, my_count, dtype, root, NULL)
                            : tutti_all_reduce(comm, send, recv, my_count, dtype, op, NULL);
  long long elapsed = now_ms() - t0;
  const char* message = status == TUTTI_OK ? "" : tutti_last_error();
  int guard_ok = 1;
  for (size_t i = 0; i < guard; ++i) guard_ok &= recv[bytes + i] == 0xA5;
  printf("MISMATCH status=%s elapsed_ms=%lld guard=%s message=\"%s\"\n", tutti_status_name(status), elapsed,
         guard_ok ? "intact" : "written", message);
  if (!guard_ok) fail("the %s wrote past this rank's receive buffer of %zu elements", field, my_count);
  free(send);
  free(recv);
  /* Stay until every rank has had its own result, so that none sees this one leave
   * (TUTTI_ERR_PEER_LOST) instead of the disagreement. */
  const char* timeout_text = getenv("TUTTI_OP_TIMEOUT_MS");
  long long stay = (timeout_text ? atoll(timeout_text) : 300000) + 1000 - elapsed;
  if (stay > 0) {
    struct timespec pause = {(time_t)(stay / 1000), (long)(stay % 1000) * 1000000L};
    nanosleep(&pause, NULL);
  }
}

/* ---- never_joins -------------------------------------------------------------------- */

static void case_never_joins(const char* absent) {
  int me_absent = 0;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", absent);
  char* save = NULL;
  for (char* item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
    me_absent |= atoi(item) == rank;
  const char* timeout_text = getenv("TUTTI_OP_TIMEOUT_MS");
  long long op_timeout = timeout_text ? atoll(timeout_text) : 300000;
  if (me_absent) {
    long long ms = op_timeout + 2500;
    struct timespec pause = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    printf("NEVER_JOINS absent, slept %lld ms\n", ms);
    return;
  }
  int32_t send[16] = {0}, recv[16];
  long long t0 = now_ms();
  tutti_status status = tutti_all_reduce(comm, send, recv, 16, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL);
  long long elapsed = now_ms() - t0;
  printf("NEVER_JOINS status=%s elapsed_ms=%lld message=\"%s\"\n", tutti_status_name(status), elapsed,
         status == TUTTI_OK ? "" : tutti_last_error());
  /* Stay until the other present ranks have timed out too: a rank that exits at once
   * would turn their TIMEOUT into PEER_LOST (they watch their peers' processes). */
  struct timespec linger = {2, 0};
  nanosleep(&linger, NULL);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *field = "count", *absent = "";
  size_t count = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--case") == 0)
      case_name = argv[i + 1];
    else if (strcmp(argv[i], "--field") == 0)
      field = argv[i + 1];
    else if (strcmp(argv[i], "--absent") == 0)
      absent = argv[i + 1];
    else if (strcmp(argv[i], "--count") == 0)
      count = (size_t)strtoull(argv[i + 1], NULL, 10);
  }
  int known = strcmp(case_name, "arguments") == 0 || strcmp(case_name, "mismatch") == 0 ||
              strcmp(case_name, "never_joins") == 0 || strcmp(case_name, "first_call") == 0;
  if (!known) {
    fprintf(stderr, "usage: coll_bad_input --case arguments|mismatch|never_joins|first_call [...]\n");
    return 2;
  }
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  tutti_status status = tutti_comm_init(&config, &comm);
  if (strcmp(case_name, "first_call") == 0) {
    tutti_status call = TUTTI_ERR_INTERNAL;
    char message[1024] = "";
    if (status != TUTTI_OK) {
      snprintf(message, sizeof message, "%s", tutti_last_error());
    } else {
      int32_t one = 1, got = 0;
      call = tutti_all_reduce(comm, &one, &got, 1, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL);
      if (call != TUTTI_OK) snprintf(message, sizeof message, "%s", tutti_last_error());
    }
    printf("FIRST_CALL init=%s call=%s message=\"%s\"\n", tutti_status_name(status),
           status == TUTTI_OK ? tutti_status_name(call) : "-", message);
    tutti_comm_destroy(comm);
    return 0;
  }
  if (status != TUTTI_OK) {
    printf("FAIL rank ? init: %s: %s\n", tutti_status_name(status), tutti_last_error());
    return 1;
  }
  int32_t r32, s32;
  tutti_comm_rank(comm, &r32);
  tutti_comm_size(comm, &s32);
  rank = r32;
  size = s32;
  if (strcmp(case_name, "arguments") == 0) case_arguments();
  if (strcmp(case_name, "mismatch") == 0) case_mismatch(field, count);
  if (strcmp(case_name, "never_joins") == 0) case_never_joins(absent);
  status = tutti_comm_destroy(comm);
  if (status != TUTTI_OK) fail("tutti_comm_destroy: %s: %s", tutti_status_name(status), tutti_last_error());
  printf("coll_bad_input: rank %d case %s, %d failures\n", rank, case_name, failures);
  return failures > 0 ? 1 : 0;
}
