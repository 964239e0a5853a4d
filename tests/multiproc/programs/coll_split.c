/* coll_split: collectives on communicators split from the world, run at the same time
 * as the world's own, for test_split.c.
 *
 *   coll_split
 *
 * Splits the world three ways: even/odd ranks (key = rank); every rank but 0 in
 * reverse order (key = -rank; rank 0 passes TUTTI_UNDEFINED and must get NULL); and
 * one communicator per rank. Then the even/odd halves split again into pairs. Checks
 * each one's rank and size, then issues collectives on the sub-communicators and on
 * the world asynchronously, in a different order on even and odd ranks, waits in yet
 * another order, and checks every result. Prints "FAIL rank R split: ..." for each
 * failed check and "coll_split: rank R, N checks, F failures"; exits 1 if F > 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_values.h"
#include "tutti.h"

static int rank, size, checks, failures;

__attribute__((format(printf, 1, 2))) static void fail(const char* format, ...) {
  char what[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(what, sizeof what, format, args);
  va_end(args);
  printf("FAIL rank %d split: %s\n", rank, what);
  ++failures;
}

static int ok(tutti_status status, const char* call) {
  ++checks;
  if (status == TUTTI_OK) return 1;
  fail("%s returned %s: %s", call, tutti_status_name(status), tutti_last_error());
  return 0;
}

static void expect_place(tutti_comm* comm, const char* name, int want_rank, int want_size) {
  int32_t got_rank = -1, got_size = -1;
  ok(tutti_comm_rank(comm, &got_rank), "tutti_comm_rank");
  ok(tutti_comm_size(comm, &got_size), "tutti_comm_size");
  ++checks;
  if (got_rank != want_rank || got_size != want_size) {
    fail("%s: rank %d of %d, want %d of %d", name, got_rank, got_size, want_rank, want_size);
  }
}

static void* fill(tutti_dtype dtype, uint64_t id, int who, size_t n) {
  unsigned char* data = malloc(n * cv_size(dtype) + 1);
  for (size_t i = 0; i < n; ++i) cv_store(dtype, data, i, cv_input(dtype, TUTTI_OP_SUM, id, who, i));
  return data;
}

/* recv = the sum over the world ranks in members[0..n_members) of their inputs. */
static void expect_sum(const char* what, tutti_dtype dtype, uint64_t id, const int* members, int n_members,
                       const void* recv, size_t n) {
  ++checks;
  for (size_t i = 0; i < n; ++i) {
    cv_accumulator acc;
    cv_acc_init(&acc, dtype, TUTTI_OP_SUM);
    for (int m = 0; m < n_members; ++m) cv_acc_add(&acc, cv_input(dtype, TUTTI_OP_SUM, id, members[m], i));
    double tolerance;
    cv_value want = cv_acc_result(&acc, &tolerance), got = cv_load(dtype, recv, i);
    if (cv_close(dtype, got, want, tolerance)) continue;
    char w[48], g[48];
    cv_format(dtype, want, w, sizeof w);
    cv_format(dtype, got, g, sizeof g);
    fail("%s: index %zu expected %s got %s", what, i, w, g);
    return;
  }
}

/* recv = world rank `who`'s inputs. */
static void expect_inputs(const char* what, tutti_dtype dtype, uint64_t id, int who, const void* recv, size_t n) {
  ++checks;
  for (size_t i = 0; i < n; ++i) {
    cv_value want = cv_input(dtype, TUTTI_OP_SUM, id, who, i);
    if (cv_same_bytes(dtype, recv, i, want)) continue;
    char w[48], g[48];
    cv_format(dtype, want, w, sizeof w);
    cv_format(dtype, cv_load(dtype, recv, i), g, sizeof g);
    fail("%s: index %zu expected %s got %s (rank %d's inputs)", what, i, w, g, who);
    return;
  }
}

static void wait_release(tutti_work* work, const char* what) {
  if (work == NULL) return;
  ok(tutti_work_wait(work, -1), what);
  ok(tutti_work_release(work), "tutti_work_release");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tutti_comm* world = NULL;
  if (!cv_join_world(&world, &rank, &size)) return 1;

  /* The world ranks in each new communicator, in its rank order. */
  int half_members[64], n_half = 0, rev_members[64], n_rev = 0, pair_members[2], n_pair = 0;
  for (int r = rank % 2; r < size; r += 2) half_members[n_half++] = r;
  for (int r = size - 1; r >= 1; --r) rev_members[n_rev++] = r;
  int half_rank = rank / 2;
  for (int h = half_rank - half_rank % 2; h < n_half && h <= half_rank - half_rank % 2 + 1; ++h) {
    pair_members[n_pair++] = half_members[h];
  }

  tutti_comm *half = NULL, *rev = NULL, *self = NULL, *pair = NULL;
  if (ok(tutti_comm_split(world, rank % 2, rank, &half), "split even/odd")) {
    expect_place(half, "even/odd split", half_rank, n_half);
  }
  rev = (tutti_comm*)&rev; /* must become NULL on rank 0 */
  if (ok(tutti_comm_split(world, rank == 0 ? TUTTI_UNDEFINED : 7, -rank, &rev), "split reversed")) {
    if (rank == 0) {
      ++checks;
      if (rev != NULL) fail("TUTTI_UNDEFINED should give *out == NULL");
      rev = NULL;
    } else {
      expect_place(rev, "reversed split", size - 1 - rank, n_rev);
    }
  } else {
    rev = NULL;
  }
  if (ok(tutti_comm_split(world, rank, 0, &self), "split one per rank")) expect_place(self, "one per rank", 0, 1);
  if (half && ok(tutti_comm_split(half, half_rank / 2, 0, &pair), "split of the split")) {
    expect_place(pair, "pair split from the even/odd split", half_rank % 2, n_pair);
  }
  if (failures > 0) {
    printf("coll_split: rank %d, %d checks, %d failures\n", rank, checks, failures);
    return 1;
  }

  /* Round 1: all_reduce on the world, the half and the pair at once. Even ranks issue
   * world first, odd ranks the sub-communicators first; both wait in reverse. */
  {
    const size_t wn = 1u << 16, hn = 1000, pn = 77;
    float* wsend = fill(TUTTI_DTYPE_FLOAT32, 100, rank, wn);
    float* wrecv = malloc(wn * 4);
    int32_t* hsend = fill(TUTTI_DTYPE_INT32, 101, rank, hn);
    int32_t* hrecv = malloc(hn * 4);
    int64_t* psend = fill(TUTTI_DTYPE_INT64, 102, rank, pn);
    int64_t* precv = malloc(pn * 8);
    tutti_work *ww = NULL, *hw = NULL, *pw = NULL;
    if (rank % 2 == 0) {
      ok(tutti_all_reduce(world, wsend, wrecv, wn, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &ww), "world all_reduce");
      ok(tutti_all_reduce(half, hsend, hrecv, hn, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, &hw), "half all_reduce");
      ok(tutti_all_reduce(pair, psend, precv, pn, TUTTI_DTYPE_INT64, TUTTI_OP_SUM, &pw), "pair all_reduce");
      wait_release(pw, "pair all_reduce");
      wait_release(hw, "half all_reduce");
      wait_release(ww, "world all_reduce");
    } else {
      ok(tutti_all_reduce(pair, psend, precv, pn, TUTTI_DTYPE_INT64, TUTTI_OP_SUM, &pw), "pair all_reduce");
      ok(tutti_all_reduce(half, hsend, hrecv, hn, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, &hw), "half all_reduce");
      ok(tutti_all_reduce(world, wsend, wrecv, wn, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &ww), "world all_reduce");
      wait_release(ww, "world all_reduce");
      wait_release(hw, "half all_reduce");
      wait_release(pw, "pair all_reduce");
    }
    int everyone[64];
    for (int r = 0; r < size; ++r) everyone[r] = r;
    expect_sum("world all_reduce", TUTTI_DTYPE_FLOAT32, 100, everyone, size, wrecv, wn);
    expect_sum("half all_reduce", TUTTI_DTYPE_INT32, 101, half_members, n_half, hrecv, hn);
    expect_sum("pair all_reduce", TUTTI_DTYPE_INT64, 102, pair_members, n_pair, precv, pn);
    free(wsend), free(wrecv), free(hsend), free(hrecv), free(psend), free(precv);
  }

  /* Round 2: all_gather on the reversed communicator (blocks in its rank order, that is
   * by descending world rank), a world broadcast from the last rank, a broadcast in the
   * half from its last member, and an all_reduce on the one-rank communicator. */
  {
    const size_t gn = 5, bn = 300, sn = 9;
    int64_t* gsend = fill(TUTTI_DTYPE_INT64, 110, rank, gn);
    int64_t* grecv = malloc(gn * 8 * (size_t)(n_rev > 0 ? n_rev : 1));
    uint8_t* bsend = fill(TUTTI_DTYPE_UINT8, 111, rank, bn);
    uint8_t* brecv = malloc(bn);
    uint16_t* hb = fill(TUTTI_DTYPE_BFLOAT16, 112, rank, bn);
    double* ssend = fill(TUTTI_DTYPE_FLOAT64, 113, rank, sn);
    double* srecv = malloc(sn * 8);
    tutti_work *gw = NULL, *bw = NULL, *hw = NULL, *sw = NULL;
    if (rev) ok(tutti_all_gather(rev, gsend, grecv, gn, TUTTI_DTYPE_INT64, &gw), "reversed all_gather");
    ok(tutti_all_reduce(self, ssend, srecv, sn, TUTTI_DTYPE_FLOAT64, TUTTI_OP_SUM, &sw), "one-rank all_reduce");
    ok(tutti_broadcast(half, half_rank == n_half - 1 ? hb : NULL, hb, bn, TUTTI_DTYPE_BFLOAT16, n_half - 1, &hw),
       "half broadcast (in place on its root)");
    ok(tutti_broadcast(world, rank == size - 1 ? bsend : NULL, brecv, bn, TUTTI_DTYPE_UINT8, size - 1, &bw),
       "world broadcast");
    wait_release(bw, "world broadcast");
    wait_release(sw, "one-rank all_reduce");
    wait_release(gw, "reversed all_gather");
    wait_release(hw, "half broadcast");
    for (int k = 0; k < n_rev && rev; ++k) {
      char what[64];
      snprintf(what, sizeof what, "reversed all_gather block %d", k);
      expect_inputs(what, TUTTI_DTYPE_INT64, 110, rev_members[k], grecv + (size_t)k * gn, gn);
    }
    expect_inputs("world broadcast", TUTTI_DTYPE_UINT8, 111, size - 1, brecv, bn);
    expect_inputs("half broadcast", TUTTI_DTYPE_BFLOAT16, 112, half_members[n_half - 1], hb, bn);
    expect_sum("one-rank all_reduce", TUTTI_DTYPE_FLOAT64, 113, &rank, 1, srecv, sn);
    free(gsend), free(grecv), free(bsend), free(brecv), free(hb), free(ssend), free(srecv);
  }

  /* Every communicator still agrees on its barrier. */
  tutti_comm* comms[] = {pair, self, rev, half, world};
  const char* names[] = {"pair", "one-rank", "reversed", "half", "world"};
  for (int i = 0; i < 5; ++i) {
    if (comms[i]) ok(tutti_barrier(comms[i], NULL), names[i]);
  }
  for (int i = 0; i < 4; ++i) ok(tutti_comm_destroy(comms[i]), "tutti_comm_destroy");
  ok(tutti_comm_destroy(world), "tutti_comm_destroy(world)");
  printf("coll_split: rank %d, %d checks, %d failures\n", rank, checks, failures);
  return failures > 0 ? 1 : 0;
}
