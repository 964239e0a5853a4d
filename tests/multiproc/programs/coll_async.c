/* coll_async: work objects and point-to-point messages, for test_work.c.
 *
 *   coll_async --case NAME [--mib N] [--rounds R]
 *
 *   overlap       the last rank issues 300 ms late; the others' async all_reduce of
 *                 4 MiB returns at once, not done; all compute 1.5 s, then sleep 1.5 s,
 *                 without calling tutti; then it is done (it progressed in the
 *                 background) and right.
 *   in_order      8 different collectives outstanding at once, a large one first:
 *                 polled, a later one is never done before an earlier one; all right.
 *   wait_timeout  the last rank issues 300 ms late: the others' wait(0) and wait(50)
 *                 return TUTTI_ERR_TIMEOUT on time and leave the work valid; wait(-1)
 *                 then succeeds.
 *   test_poll     tutti_work_test polled until done; wait then returns at once.
 *   p2p           (2 ranks) isend/irecv both ways at once, small and 4 MiB; blocking
 *                 send/recv with tags; receives posted in another tag order than the
 *                 sends; same-tag order; a receive larger than the message; empty
 *                 messages; p2p issued behind a collective.
 *   p2p_too_small (2 ranks) a receive smaller than the message: TUTTI_ERR_INVALID_ARGUMENT
 *                 naming both sizes, nothing written past the buffer; the comm works after.
 *   irecv_unanswered (2 ranks) rank 1's irecv that rank 0 never answers, under a 500 ms
 *                 op timeout: wait(-1) returns TUTTI_ERR_TIMEOUT naming rank 0, within
 *                 the bound; an all_reduce works after.
 *   isend_then_blocking (2 ranks) an isend behind which its sender makes a blocking
 *                 collective while the receiver is still in its blocking recv.
 *   irecv_while_computing (2 ranks) rank 1 posts a 4 MiB irecv (--mib N: N MiB) and
 *                 computes for 2 s without a call; rank 0's isend of it and its wait
 *                 end long before (the executor's thread, poked by the post, moves the
 *                 receive, which the sender's rendezvous needs). R rounds (--rounds):
 *                 the first pays for the connection and the pages, by hand.
 *
 * Prints "<CASE> ..." lines with what it measured, "FAIL rank R <case>: ..." for each
 * failed check, and "coll_async: rank R case NAME, F failures"; exits 1 if F > 0. */
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
static int rank, size;
static const char* case_name = "";
static int irecv_mib = 4;    /* irecv_while_computing's message, MiB */
static int irecv_rounds = 1; /* and how many times it is sent */
static int failures;

__attribute__((format(printf, 1, 2))) static void fail(const char* format, ...) {
  char what[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  printf("FAIL rank %d %s: %s\n", rank, case_name, what);
  ++failures;
}

/* Fails with the call's name, status and tutti_last_error() unless status is OK. */
static int ok(tutti_status status, const char* call) {
  if (status == TUTTI_OK) return 1;
  fail("%s returned %s: %s", call, tutti_status_name(status), tutti_last_error());
  return 0;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void* fill(tutti_dtype dtype, uint64_t id, int who, size_t n) {
  unsigned char* data = malloc(n * cv_size(dtype) + 1);
  for (size_t i = 0; i < n; ++i) cv_store(dtype, data, i, cv_input(dtype, TUTTI_OP_SUM, id, who, i));
  return data;
}

/* recv holds rank `who`'s inputs from index `first` on (n of them). */
static void expect_inputs(const char* what, tutti_dtype dtype, uint64_t id, int who, size_t first, const void* recv,
                          size_t n) {
  for (size_t i = 0; i < n; ++i) {
    cv_value want = cv_input(dtype, TUTTI_OP_SUM, id, who, first + i);
    if (cv_same_bytes(dtype, recv, i, want)) continue;
    char w[48], g[48];
    cv_format(dtype, want, w, sizeof w);
    cv_format(dtype, cv_load(dtype, recv, i), g, sizeof g);
    fail("%s: index %zu expected %s got %s", what, i, w, g);
    return;
  }
}

/* recv holds the op-reduction over all ranks of their inputs from index offset on. */
static void expect_reduced(const char* what, tutti_dtype dtype, tutti_op op, uint64_t id, const void* recv, size_t n,
                           size_t offset) {
  for (size_t i = 0; i < n; ++i) {
    cv_accumulator acc;
    cv_acc_init(&acc, dtype, op);
    for (int r = 0; r < size; ++r) cv_acc_add(&acc, cv_input(dtype, TUTTI_OP_SUM, id, r, offset + i));
    double tolerance;
    cv_value want = cv_acc_result(&acc, &tolerance);
    cv_value got = cv_load(dtype, recv, i);
    if (cv_close(dtype, got, want, tolerance)) continue;
    char w[48], g[48];
    cv_format(dtype, want, w, sizeof w);
    cv_format(dtype, got, g, sizeof g);
    fail("%s: index %zu expected %s got %s", what, i, w, g);
    return;
  }
}

/* ---- overlap ------------------------------------------------------------------------ */

static volatile double sink;

static void compute_for(int ms) {
  long long until = now_ms() + ms;
  double x = 1.0;
  while (now_ms() < until) {
    for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
  }
  sink = x;
}

static void case_overlap(void) {
  const size_t n = 1u << 20;
  float* send = fill(TUTTI_DTYPE_FLOAT32, 1, rank, n);
  float* recv = malloc(n * sizeof(float));
  int late = rank == size - 1 && size > 1;
  if (late) sleep_ms(300);
  tutti_work* work = NULL;
  long long t0 = now_ms();
  if (!ok(tutti_all_reduce(comm, send, recv, n, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &work), "tutti_all_reduce")) return;
  long long issue_ms = now_ms() - t0;
  int done_at_issue = -1, done_before_wait = -1;
  ok(tutti_work_test(work, &done_at_issue), "tutti_work_test");
  if (!late && size > 1 && done_at_issue != 0) {
    fail("the all_reduce was done right after it was issued, although rank %d joins 300 ms later", size - 1);
  }
  /* Busy for 1.5 s, then idle for 1.5 s (on a loaded machine the communicator's own
   * thread may need the CPU the computation took); no tutti call in either. */
  compute_for(1500);
  int done_after_compute = -1;
  ok(tutti_work_test(work, &done_after_compute), "tutti_work_test");
  sleep_ms(1500);
  ok(tutti_work_test(work, &done_before_wait), "tutti_work_test");
  if (done_before_wait != 1) fail("the all_reduce did not finish in the 3 s the rank spent computing and sleeping");
  t0 = now_ms();
  int waited = ok(tutti_work_wait(work, -1), "tutti_work_wait");
  long long wait_ms = now_ms() - t0;
  ok(tutti_work_release(work), "tutti_work_release");
  if (waited) expect_reduced("all_reduce result", TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, 1, recv, n, 0);
  expect_inputs("send buffer", TUTTI_DTYPE_FLOAT32, 1, rank, 0, send, n);
  printf("OVERLAP issue_ms=%lld done_at_issue=%d done_after_compute=%d done_before_wait=%d wait_ms=%lld\n", issue_ms,
         done_at_issue, done_after_compute, done_before_wait, wait_ms);
  free(send);
  free(recv);
}

/* ---- in_order ----------------------------------------------------------------------- */

#define IN_ORDER_OPS 8

static void case_in_order(void) {
  const size_t big = 1u << 20, c1 = 1000, c2 = 100, c3 = 50, c4 = 33, c5 = 64, c7 = 10;
  void* send[IN_ORDER_OPS] = {0};
  void* recv[IN_ORDER_OPS] = {0};
  tutti_work* work[IN_ORDER_OPS] = {0};
  const char* names[IN_ORDER_OPS] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter",
                                     "all_to_all", "reduce",    "barrier",    "all_reduce(int8)"};
  send[0] = fill(TUTTI_DTYPE_FLOAT32, 10, rank, big);
  recv[0] = malloc(big * 4);
  send[1] = fill(TUTTI_DTYPE_INT32, 11, rank, c1);
  recv[1] = malloc(c1 * 4);
  send[2] = fill(TUTTI_DTYPE_INT64, 12, rank, c2);
  recv[2] = malloc(c2 * 8 * (size_t)size);
  send[3] = fill(TUTTI_DTYPE_INT32, 13, rank, c3 * (size_t)size);
  recv[3] = malloc(c3 * 4);
  send[4] = fill(TUTTI_DTYPE_UINT8, 14, rank, c4 * (size_t)size);
  recv[4] = malloc(c4 * (size_t)size);
  send[5] = fill(TUTTI_DTYPE_FLOAT64, 15, rank, c5);
  recv[5] = malloc(c5 * 8);
  send[7] = fill(TUTTI_DTYPE_INT8, 17, rank, c7);
  recv[7] = malloc(c7);
  tutti_status issued[IN_ORDER_OPS];
  issued[0] = tutti_all_reduce(comm, send[0], recv[0], big, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &work[0]);
  issued[1] = tutti_broadcast(comm, send[1], recv[1], c1, TUTTI_DTYPE_INT32, size - 1, &work[1]);
  issued[2] = tutti_all_gather(comm, send[2], recv[2], c2, TUTTI_DTYPE_INT64, &work[2]);
  issued[3] = tutti_reduce_scatter(comm, send[3], recv[3], c3, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, &work[3]);
  issued[4] = tutti_all_to_all(comm, send[4], recv[4], c4, TUTTI_DTYPE_UINT8, &work[4]);
  issued[5] = tutti_reduce(comm, send[5], recv[5], c5, TUTTI_DTYPE_FLOAT64, TUTTI_OP_MAX, 0, &work[5]);
  issued[6] = tutti_barrier(comm, &work[6]);
  issued[7] = tutti_all_reduce(comm, send[7], recv[7], c7, TUTTI_DTYPE_INT8, TUTTI_OP_SUM, &work[7]);
  for (int k = 0; k < IN_ORDER_OPS; ++k) {
    if (!ok(issued[k], names[k])) return;
  }

  /* Test the later ones first: if k reads done and an earlier j, tested after it,
   * still reads not done, j finished after k. */
  int polls = 0, violations = 0, all_done = 0;
  long long deadline = now_ms() + 60000;
  while (!all_done && now_ms() < deadline) {
    int done[IN_ORDER_OPS];
    for (int k = IN_ORDER_OPS - 1; k >= 0; --k) ok(tutti_work_test(work[k], &done[k]), "tutti_work_test");
    ++polls;
    all_done = 1;
    for (int k = 0; k < IN_ORDER_OPS; ++k) {
      all_done &= done[k];
      for (int j = 0; j < k; ++j) {
        if (done[k] && !done[j]) {
          if (violations++ < 3) fail("operation %d (%s) was done before operation %d (%s)", k, names[k], j, names[j]);
        }
      }
    }
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
  }
  if (!all_done) fail("not every operation was done after 60 s of polling");
  for (int k = IN_ORDER_OPS - 1; k >= 0; --k) {
    ok(tutti_work_wait(work[k], -1), names[k]);
    ok(tutti_work_release(work[k]), "tutti_work_release");
  }
  expect_reduced("all_reduce", TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, 10, recv[0], big, 0);
  expect_inputs("broadcast", TUTTI_DTYPE_INT32, 11, size - 1, 0, recv[1], c1);
  for (int r = 0; r < size; ++r) {
    expect_inputs("all_gather", TUTTI_DTYPE_INT64, 12, r, 0, (char*)recv[2] + (size_t)r * c2 * 8, c2);
    expect_inputs("all_to_all", TUTTI_DTYPE_UINT8, 14, r, (size_t)rank * c4, (char*)recv[4] + (size_t)r * c4, c4);
  }
  expect_reduced("reduce_scatter", TUTTI_DTYPE_INT32, TUTTI_OP_SUM, 13, recv[3], c3, (size_t)rank * c3);
  if (rank == 0) expect_reduced("reduce max", TUTTI_DTYPE_FLOAT64, TUTTI_OP_MAX, 15, recv[5], c5, 0);
  expect_reduced("all_reduce int8", TUTTI_DTYPE_INT8, TUTTI_OP_SUM, 17, recv[7], c7, 0);
  printf("IN_ORDER polls=%d violations=%d\n", polls, violations);
  for (int k = 0; k < IN_ORDER_OPS; ++k) {
    free(send[k]);
    free(recv[k]);
  }
}

/* ---- wait_timeout and test_poll ----------------------------------------------------- */

static void case_wait_timeout(void) {
  const size_t n = 1000;
  int32_t* send = fill(TUTTI_DTYPE_INT32, 20, rank, n);
  int32_t* recv = malloc(n * 4);
  int late = rank == size - 1;
  if (size < 2) fail("needs at least 2 ranks");
  if (late) sleep_ms(300);
  tutti_work* work = NULL;
  if (!ok(tutti_all_reduce(comm, send, recv, n, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, &work), "tutti_all_reduce")) return;
  if (!late) {
    long long t0 = now_ms();
    tutti_status zero = tutti_work_wait(work, 0);
    long long zero_ms = now_ms() - t0;
    t0 = now_ms();
    tutti_status first = tutti_work_wait(work, 50);
    long long first_ms = now_ms() - t0;
    char message[512];
    snprintf(message, sizeof message, "%s", tutti_last_error());
    int done = -1;
    ok(tutti_work_test(work, &done), "tutti_work_test after the timed-out wait");
    printf("WAIT_TIMEOUT zero=%s zero_ms=%lld first=%s first_ms=%lld done=%d message=\"%s\"\n", tutti_status_name(zero),
           zero_ms, tutti_status_name(first), first_ms, done, message);
    if (zero != TUTTI_INPROGRESS || zero_ms > 100) {
      fail("wait(0) on an unfinished operation returned %s after %lld ms; want TUTTI_INPROGRESS at once",
           tutti_status_name(zero), zero_ms);
    }
    if (first != TUTTI_INPROGRESS) fail("wait(50) returned %s; want TUTTI_INPROGRESS", tutti_status_name(first));
    if (first_ms < 45 || first_ms > 1000) fail("wait(50) returned after %lld ms", first_ms);
    if (first == TUTTI_INPROGRESS && message[0] == '\0') fail("wait(50) ran out with an empty tutti_last_error()");
    if (done != 0) fail("tutti_work_test says done=%d after wait(50) timed out", done);
  }
  long long t0 = now_ms();
  tutti_status second = tutti_work_wait(work, -1);
  printf("WAIT_TIMEOUT second=%s second_ms=%lld\n", tutti_status_name(second), now_ms() - t0);
  if (ok(second, "the second tutti_work_wait")) {
    expect_reduced("all_reduce result", TUTTI_DTYPE_INT32, TUTTI_OP_SUM, 20, recv, n, 0);
  }
  ok(tutti_work_release(work), "tutti_work_release");
  free(send);
  free(recv);
}

static void case_test_poll(void) {
  const size_t n = 1u << 16;
  float* send = fill(TUTTI_DTYPE_FLOAT32, 30, rank, n);
  float* recv = malloc(n * 4);
  int late = rank == size - 1 && size > 1;
  if (late) sleep_ms(200);
  tutti_work* work = NULL;
  if (!ok(tutti_all_reduce(comm, send, recv, n, TUTTI_DTYPE_FLOAT32, TUTTI_OP_AVG, &work), "tutti_all_reduce")) return;
  int done = 0, polls = 0;
  long long deadline = now_ms() + 30000;
  while (!done && now_ms() < deadline) {
    if (!ok(tutti_work_test(work, &done), "tutti_work_test")) break;
    ++polls;
    if (!done) sleep_ms(1);
  }
  if (!done) fail("tutti_work_test never said done in 30 s (%d polls)", polls);
  if (!late && size > 1 && polls < 2) fail("done at the first poll although rank %d joined 200 ms late", size - 1);
  long long t0 = now_ms();
  tutti_status waited = tutti_work_wait(work, 0);
  long long wait_ms = now_ms() - t0;
  if (ok(waited, "tutti_work_wait(0) after test said done")) {
    expect_reduced("all_reduce avg", TUTTI_DTYPE_FLOAT32, TUTTI_OP_AVG, 30, recv, n, 0);
  }
  if (wait_ms > 100) fail("wait after test said done took %lld ms", wait_ms);
  ok(tutti_work_release(work), "tutti_work_release");
  printf("TEST_POLL polls=%d wait_ms=%lld\n", polls, wait_ms);
  free(send);
  free(recv);
}

/* ---- point to point ----------------------------------------------------------------- */

/* Both ranks post a receive and a send to each other, then wait for both. */
static void exchange(tutti_dtype dtype, size_t n, int tag, uint64_t id) {
  int peer = 1 - rank;
  void* send = fill(dtype, id, rank, n);
  void* recv = malloc(n * cv_size(dtype) + 1);
  tutti_work *r = NULL, *s = NULL;
  char what[64];
  snprintf(what, sizeof what, "exchange of %zu %s", n, cv_dtype_name(dtype));
  if (ok(tutti_recv(comm, recv, n, dtype, peer, tag, &r), "tutti_recv") &&
      ok(tutti_send(comm, send, n, dtype, peer, tag, &s), "tutti_send")) {
    int got = ok(tutti_work_wait(r, -1), "wait for the receive");
    ok(tutti_work_wait(s, -1), "wait for the send");
    if (got) expect_inputs(what, dtype, id, peer, 0, recv, n);
  }
  tutti_work_release(r);
  tutti_work_release(s);
  free(send);
  free(recv);
}

static void case_p2p(void) {
  if (size != 2) {
    fail("needs exactly 2 ranks, not %d", size);
    return;
  }
  int peer = 1 - rank;
  exchange(TUTTI_DTYPE_INT32, 5000, 3, 40);
  exchange(TUTTI_DTYPE_FLOAT32, 1u << 20, 4, 41);
  exchange(TUTTI_DTYPE_FLOAT16, 0, 5, 42);

  /* Blocking, with tags, one direction then the other. */
  for (int sender = 0; sender < 2; ++sender) {
    int32_t* a = fill(TUTTI_DTYPE_INT32, 43, sender, 10);
    int64_t* b = fill(TUTTI_DTYPE_INT64, 44, sender, 20);
    if (rank == sender) {
      ok(tutti_send(comm, a, 10, TUTTI_DTYPE_INT32, peer, 1, NULL), "blocking tutti_send tag 1");
      ok(tutti_send(comm, b, 20, TUTTI_DTYPE_INT64, peer, 2, NULL), "blocking tutti_send tag 2");
    } else {
      int32_t ra[10];
      int64_t rb[20];
      if (ok(tutti_recv(comm, ra, 10, TUTTI_DTYPE_INT32, peer, 1, NULL), "blocking tutti_recv tag 1")) {
        expect_inputs("blocking recv tag 1", TUTTI_DTYPE_INT32, 43, sender, 0, ra, 10);
      }
      if (ok(tutti_recv(comm, rb, 20, TUTTI_DTYPE_INT64, peer, 2, NULL), "blocking tutti_recv tag 2")) {
        expect_inputs("blocking recv tag 2", TUTTI_DTYPE_INT64, 44, sender, 0, rb, 20);
      }
    }
    free(a);
    free(b);
  }

  /* Receives posted in the other tag order than the sends: matched by tag. */
  {
    int32_t* x = fill(TUTTI_DTYPE_INT32, 45, 0, 8);
    int32_t* y = fill(TUTTI_DTYPE_INT32, 46, 0, 8);
    int32_t rx[8], ry[8];
    tutti_work* w[2] = {NULL, NULL};
    if (rank == 0) {
      ok(tutti_send(comm, x, 8, TUTTI_DTYPE_INT32, 1, 11, &w[0]), "tutti_send tag 11");
      ok(tutti_send(comm, y, 8, TUTTI_DTYPE_INT32, 1, 12, &w[1]), "tutti_send tag 12");
    } else {
      ok(tutti_recv(comm, ry, 8, TUTTI_DTYPE_INT32, 0, 12, &w[1]), "tutti_recv tag 12");
      ok(tutti_recv(comm, rx, 8, TUTTI_DTYPE_INT32, 0, 11, &w[0]), "tutti_recv tag 11");
    }
    int waited = 1;
    for (int i = 0; i < 2; ++i) {
      if (w[i]) waited &= ok(tutti_work_wait(w[i], -1), i == 0 ? "wait tag 11" : "wait tag 12");
      tutti_work_release(w[i]);
    }
    if (rank == 1 && waited) {
      expect_inputs("tag 11 (received second)", TUTTI_DTYPE_INT32, 45, 0, 0, rx, 8);
      expect_inputs("tag 12 (received first)", TUTTI_DTYPE_INT32, 46, 0, 0, ry, 8);
    }
    free(x);
    free(y);
  }

  /* Three messages with one tag arrive in the order they were sent. */
  {
    tutti_work* w[3] = {NULL, NULL, NULL};
    int32_t* m[3];
    int32_t got[3][16];
    for (int i = 0; i < 3; ++i) m[i] = fill(TUTTI_DTYPE_INT32, 50 + (uint64_t)i, 0, 16);
    for (int i = 0; i < 3; ++i) {
      if (rank == 0) {
        ok(tutti_send(comm, m[i], 16, TUTTI_DTYPE_INT32, 1, 9, &w[i]), "tutti_send tag 9");
      } else {
        ok(tutti_recv(comm, got[i], 16, TUTTI_DTYPE_INT32, 0, 9, &w[i]), "tutti_recv tag 9");
      }
    }
    int waited = 1;
    for (int i = 0; i < 3; ++i) {
      if (w[i]) waited &= ok(tutti_work_wait(w[i], -1), "wait tag 9");
      tutti_work_release(w[i]);
    }
    if (rank == 1 && waited) {
      char what[48];
      for (int i = 0; i < 3; ++i) {
        snprintf(what, sizeof what, "message %d of 3 with tag 9", i + 1);
        expect_inputs(what, TUTTI_DTYPE_INT32, 50 + (uint64_t)i, 0, 0, got[i], 16);
      }
    }
    for (int i = 0; i < 3; ++i) free(m[i]);
  }

  /* A receive larger than the message takes it. */
  {
    int32_t* a = fill(TUTTI_DTYPE_INT32, 55, 0, 10);
    int32_t big[20];
    if (rank == 0) {
      ok(tutti_send(comm, a, 10, TUTTI_DTYPE_INT32, 1, 6, NULL), "tutti_send of 10");
    } else if (ok(tutti_recv(comm, big, 20, TUTTI_DTYPE_INT32, 0, 6, NULL), "tutti_recv of up to 20")) {
      expect_inputs("10 elements into a receive of 20", TUTTI_DTYPE_INT32, 55, 0, 0, big, 10);
    }
    free(a);
  }

  /* Point to point issued behind a collective waits for it, without deadlock. */
  {
    const size_t n = 1u << 18;
    float* send = fill(TUTTI_DTYPE_FLOAT32, 56, rank, n);
    float* sum = malloc(n * 4);
    int32_t* msg = fill(TUTTI_DTYPE_INT32, 57, rank, 100);
    int32_t got[100];
    tutti_work *collective = NULL, *s = NULL, *r = NULL;
    ok(tutti_all_reduce(comm, send, sum, n, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &collective), "tutti_all_reduce");
    ok(tutti_send(comm, msg, 100, TUTTI_DTYPE_INT32, peer, 7, &s), "tutti_send after all_reduce");
    ok(tutti_recv(comm, got, 100, TUTTI_DTYPE_INT32, peer, 7, &r), "tutti_recv after all_reduce");
    int r_ok = r && ok(tutti_work_wait(r, -1), "wait recv");
    int s_ok = s && ok(tutti_work_wait(s, -1), "wait send");
    int c_ok = collective && ok(tutti_work_wait(collective, -1), "wait all_reduce");
    if (r_ok) expect_inputs("message behind a collective", TUTTI_DTYPE_INT32, 57, peer, 0, got, 100);
    if (c_ok) expect_reduced("all_reduce before p2p", TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, 56, sum, n, 0);
    (void)s_ok;
    tutti_work_release(collective);
    tutti_work_release(s);
    tutti_work_release(r);
    free(send);
    free(sum);
    free(msg);
  }
  printf("P2P done\n");
}

static void case_p2p_too_small(void) {
  if (size != 2) {
    fail("needs exactly 2 ranks, not %d", size);
    return;
  }
  int32_t* message = fill(TUTTI_DTYPE_INT32, 60, 0, 10);
  if (rank == 0) {
    long long t0 = now_ms();
    tutti_status sent = tutti_send(comm, message, 10, TUTTI_DTYPE_INT32, 1, 4, NULL);
    printf("TOO_SMALL send=%s send_ms=%lld message=\"%s\"\n", tutti_status_name(sent), now_ms() - t0,
           sent == TUTTI_OK ? "" : tutti_last_error());
  } else {
    /* 5 elements, then a guard of 64 bytes. */
    unsigned char area[5 * 4 + 64];
    memset(area, 0xA5, sizeof area);
    tutti_status got = tutti_recv(comm, area, 5, TUTTI_DTYPE_INT32, 0, 4, NULL);
    const char* message_text = tutti_last_error();
    int guard_ok = 1;
    for (size_t i = 20; i < sizeof area; ++i) guard_ok &= area[i] == 0xA5;
    printf("TOO_SMALL recv=%s guard=%s message=\"%s\"\n", tutti_status_name(got), guard_ok ? "intact" : "written",
           got == TUTTI_OK ? "" : message_text);
    if (got != TUTTI_ERR_INVALID_ARGUMENT) {
      fail("a receive of 5 for a message of 10 returned %s; want TUTTI_ERR_INVALID_ARGUMENT", tutti_status_name(got));
    } else if ((strstr(message_text, "10") == NULL && strstr(message_text, "40") == NULL) ||
               (strstr(message_text, "5") == NULL && strstr(message_text, "20") == NULL)) {
      fail("the message should name both sizes (10 and 5 elements, or 40 and 20 bytes): \"%s\"", message_text);
    }
    if (!guard_ok) fail("the receive wrote past its 5 elements");
  }
  /* The communicator still works. */
  int32_t* send = fill(TUTTI_DTYPE_INT32, 61, rank, 5);
  int32_t sum[5];
  tutti_status after = tutti_all_reduce(comm, send, sum, 5, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL);
  printf("TOO_SMALL all_reduce_after=%s\n", tutti_status_name(after));
  if (ok(after, "tutti_all_reduce after the failed receive")) {
    expect_reduced("all_reduce after", TUTTI_DTYPE_INT32, TUTTI_OP_SUM, 61, sum, 5, 0);
  }
  free(send);
  free(message);
}

/* An isend large enough for a rendezvous protocol, then a blocking barrier on the same
 * communicator, while the receiver is still in its blocking recv: the barrier (in
 * shared memory) must keep the send moving, or neither rank gets past its call. */
static void case_irecv_unanswered(void) {
  if (size != 2) {
    fail("needs exactly 2 ranks, not %d", size);
    return;
  }
  if (rank == 1) {
    int32_t slot = 0;
    tutti_work* recv = NULL;
    ok(tutti_comm_set_op_timeout(comm, 500), "tutti_comm_set_op_timeout(500)");
    if (ok(tutti_recv(comm, &slot, 1, TUTTI_DTYPE_INT32, 0, 5, &recv), "tutti_recv (irecv)")) {
      long long t0 = now_ms();
      tutti_status status = tutti_work_wait(recv, -1);
      long long waited = now_ms() - t0;
      const char* message = tutti_last_error();
      int names_peer = message != NULL && strstr(message, "rank 0 did not send it") != NULL;
      printf("IRECV_UNANSWERED wait=%s waited_ms=%lld names_peer=%d\n", tutti_status_name(status), waited, names_peer);
      if (!names_peer) printf("IRECV_UNANSWERED message: %s\n", message ? message : "(none)");
    }
    tutti_work_release(recv);
    ok(tutti_comm_set_op_timeout(comm, 30000), "tutti_comm_set_op_timeout(30000)");
  }
  int32_t value = rank + 1;
  if (ok(tutti_all_reduce(comm, &value, &value, 1, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL), "all_reduce after")) {
    if (value != 3) fail("all_reduce after the timed-out irecv gave %d, not 3", value);
  }
  printf("IRECV_UNANSWERED done\n");
}

static void case_isend_then_blocking(void) {
  if (size != 2) {
    fail("needs exactly 2 ranks, not %d", size);
    return;
  }
  const size_t n = 1 << 16;
  int32_t* message = fill(TUTTI_DTYPE_INT32, 62, 0, n);
  if (rank == 0) {
    tutti_work* send = NULL;
    if (ok(tutti_send(comm, message, n, TUTTI_DTYPE_INT32, 1, 9, &send), "tutti_send (isend)")) {
      ok(tutti_barrier(comm, NULL), "tutti_barrier behind the isend");
      ok(tutti_work_wait(send, -1), "wait isend");
    }
    tutti_work_release(send);
  } else {
    int32_t* got = calloc(n, sizeof *got);
    if (ok(tutti_recv(comm, got, n, TUTTI_DTYPE_INT32, 0, 9, NULL), "tutti_recv")) {
      expect_inputs("isend before a barrier", TUTTI_DTYPE_INT32, 62, 0, 0, got, n);
    }
    ok(tutti_barrier(comm, NULL), "tutti_barrier after the recv");
    free(got);
  }
  printf("ISEND_THEN_BLOCKING done\n");
  free(message);
}

static void case_irecv_while_computing(void) {
  if (size != 2) {
    fail("needs exactly 2 ranks, not %d", size);
    return;
  }
  const size_t n = (size_t)irecv_mib << 18; /* int32 elements */
  const int compute_ms = 2000;
  int32_t* message = fill(TUTTI_DTYPE_INT32, 63, 0, n);
  int32_t* got = calloc(n, sizeof *got);
  for (int round = 0; round < irecv_rounds; ++round) {
    ok(tutti_barrier(comm, NULL), "tutti_barrier before");
    if (rank == 0) {
      long long start = now_ms();
      tutti_work* send = NULL;
      if (ok(tutti_send(comm, message, n, TUTTI_DTYPE_INT32, 1, 3, &send), "tutti_send (isend)")) {
        ok(tutti_work_wait(send, -1), "wait isend");
      }
      tutti_work_release(send);
      long long sent_ms = now_ms() - start;
      printf("IRECV_WHILE_COMPUTING sent_ms=%lld compute_ms=%d\n", sent_ms, compute_ms);
      if (sent_ms >= compute_ms / 2)
        fail("the isend took %lld ms while the receiver computed %d ms", sent_ms, compute_ms);
    } else {
      tutti_work* recv = NULL;
      if (ok(tutti_recv(comm, got, n, TUTTI_DTYPE_INT32, 0, 3, &recv), "tutti_recv (irecv)")) {
        compute_for(compute_ms);
        if (ok(tutti_work_wait(recv, -1), "wait irecv"))
          expect_inputs("irecv while computing", TUTTI_DTYPE_INT32, 63, 0, 0, got, n);
      }
      tutti_work_release(recv);
    }
  }
  ok(tutti_barrier(comm, NULL), "tutti_barrier after");
  printf("IRECV_WHILE_COMPUTING done\n");
  free(got);
  free(message);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--case") == 0) case_name = argv[i + 1];
    if (strcmp(argv[i], "--mib") == 0) irecv_mib = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--rounds") == 0) irecv_rounds = atoi(argv[i + 1]);
  }
  if (irecv_mib < 1 || irecv_mib > 4096 || irecv_rounds < 1 || irecv_rounds > 100) {
    fprintf(stderr, "coll_async: --mib takes 1 to 4096 and --rounds 1 to 100, not %d and %d\n", irecv_mib,
            irecv_rounds);
    return 2;
  }
  static const struct {
    const char* name;
    void (*run)(void);
  } cases[] = {{"overlap", case_overlap},
               {"in_order", case_in_order},
               {"wait_timeout", case_wait_timeout},
               {"test_poll", case_test_poll},
               {"p2p", case_p2p},
               {"p2p_too_small", case_p2p_too_small},
               {"irecv_unanswered", case_irecv_unanswered},
               {"isend_then_blocking", case_isend_then_blocking},
               {"irecv_while_computing", case_irecv_while_computing}};
  void (*run)(void) = NULL;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    if (strcmp(cases[i].name, case_name) == 0) run = cases[i].run;
  }
  if (run == NULL) {
    fprintf(stderr,
            "usage: coll_async [--mib N] [--rounds R] --case "
            "overlap|in_order|wait_timeout|test_poll|p2p|p2p_too_small|irecv_unanswered|isend_then_blocking|"
            "irecv_while_computing\n");
    return 2;
  }
  if (!cv_join_world(&comm, &rank, &size)) return 1;
  run();
  ok(tutti_comm_destroy(comm), "tutti_comm_destroy");
  printf("coll_async: rank %d case %s, %d failures\n", rank, case_name, failures);
  return failures > 0 ? 1 : 0;
}
