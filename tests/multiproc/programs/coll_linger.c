/* coll_linger: a rank whose last send UCX holds back goes on to wait somewhere else;
 * its peer must still get the bytes. For test_collectives.c's bytes_held_back_* tests.
 *
 *   coll_linger reduce BATCHES REDUCES BYTES
 *   coll_linger p2p MESSAGES BYTES
 *
 * Over TCP, UCX calls a send done while its last bytes may still wait in its own
 * buffer for the socket (full while the peer is slow to read), and writes them only in
 * a later progress of the same communicator.
 *   reduce: binomial reduces whose leaves run ahead of their parents, each batch
 *     followed by an all_reduce the selector runs hierarchically, shared memory within
 *     each emulated node first: a leaf waits there while its parent waits for it.
 *   p2p: rank 1 sends MESSAGES blocking sends to rank 0, then waits in a barrier on
 *     another communicator, which rank 0 joins only once it has every message.
 * Checks every value; prints "FAIL rank R linger: ..." for each failed check and
 * "coll_linger: rank R, N operations, F failures"; exits 1 if F > 0. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_values.h"
#include "tutti.h"

static tutti_comm* comm;
static int rank, size, failures;

static int ok(tutti_status status, const char* what, int index) {
  if (status == TUTTI_OK) return 1;
  printf("FAIL rank %d linger: %s %d: %s\n", rank, what, index, tutti_last_error());
  ++failures;
  return 0;
}

/* Element i of round r from rank `from`. */
static int32_t value(int from, int32_t round, size_t i) { return from + round + (int32_t)i; }

static int run_reduces(int batches, int reduces, size_t count) {
  int32_t* send = malloc(count * sizeof *send);
  int32_t* recv = malloc(count * sizeof *recv);
  for (int batch = 0; batch < batches && failures == 0; ++batch) {
    for (int r = 0; r < reduces && failures == 0; ++r) {
      const int32_t round = batch * reduces + r;
      for (size_t i = 0; i < count; ++i) send[i] = value(rank, round, i);
      if (!ok(tutti_reduce(comm, send, recv, count, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, 0, NULL), "reduce", round)) break;
      for (size_t i = 0; rank == 0 && i < count; ++i) {
        const int32_t want = size * (size - 1) / 2 + size * (round + (int32_t)i);
        if (recv[i] != want) {
          printf("FAIL rank %d linger: reduce %d element %zu is %d, want %d\n", rank, round, i, recv[i], want);
          ++failures;
          break;
        }
      }
    }
    int32_t one = 1, ranks = 0;
    if (failures == 0 &&
        ok(tutti_all_reduce(comm, &one, &ranks, 1, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL), "all_reduce after batch",
           batch) &&
        ranks != size) {
      printf("FAIL rank %d linger: all_reduce after batch %d gave %d, want %d\n", rank, batch, ranks, size);
      ++failures;
    }
  }
  free(send);
  free(recv);
  return batches * reduces;
}

static int run_point_to_point(int messages, size_t count) {
  tutti_comm* other = NULL;
  if (!ok(tutti_comm_split(comm, 0, rank, &other), "split", 0)) return 0;
  int32_t* data = malloc(count * sizeof *data);
  /* Rank 0 reads late, so that rank 1's sends fill the sockets. */
  if (rank == 0) nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
  for (int m = 0; m < messages && failures == 0 && rank < 2; ++m) {
    if (rank == 1) {
      for (size_t i = 0; i < count; ++i) data[i] = value(rank, m, i);
      ok(tutti_send(comm, data, count, TUTTI_DTYPE_INT32, 0, 7, NULL), "send", m);
      continue;
    }
    memset(data, 0, count * sizeof *data);
    if (!ok(tutti_recv(comm, data, count, TUTTI_DTYPE_INT32, 1, 7, NULL), "recv", m)) break;
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != value(1, m, i)) {
        printf("FAIL rank %d linger: message %d element %zu is %d, want %d\n", rank, m, i, data[i], value(1, m, i));
        ++failures;
        break;
      }
    }
  }
  ok(tutti_barrier(other, NULL), "barrier on the other communicator", 0);
  ok(tutti_comm_destroy(other), "destroy the other communicator", 0);
  free(data);
  return messages;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int reduce_mode = argc == 5 && strcmp(argv[1], "reduce") == 0;
  const int p2p_mode = argc == 4 && strcmp(argv[1], "p2p") == 0;
  if (!reduce_mode && !p2p_mode) {
    fprintf(stderr, "usage: coll_linger reduce BATCHES REDUCES BYTES | coll_linger p2p MESSAGES BYTES\n");
    return 2;
  }
  if (!cv_join_world(&comm, &rank, &size)) return 1;
  const size_t count = (size_t)atol(argv[argc - 1]) / sizeof(int32_t);
  const int operations =
      reduce_mode ? run_reduces(atoi(argv[2]), atoi(argv[3]), count) : run_point_to_point(atoi(argv[2]), count);
  ok(tutti_comm_destroy(comm), "destroy", 0);
  printf("coll_linger: rank %d, %d operations, %d failures\n", rank, operations, failures);
  return failures > 0 ? 1 : 0;
}
