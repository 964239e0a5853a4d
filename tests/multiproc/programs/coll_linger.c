/* coll_linger: binomial reduces whose leaves run ahead of their parents, each batch
 * followed by an all_reduce the selector runs hierarchically (shared memory within
 * each emulated node first), for test_collectives.c's bytes_held_back_by_ucx test.
 *
 *   coll_linger BATCHES REDUCES BYTES
 *
 * Over TCP, UCX calls a send done while its last bytes may still wait in its own
 * buffer for the socket; a leaf that goes on into the all_reduce's node-local step
 * must still let them out, or its parent, waiting for them, never joins that step.
 * Checks the root's sums and the all_reduce; prints "FAIL rank R linger: ..." for each
 * failed check and "coll_linger: rank R, N reduces, F failures"; exits 1 if F > 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll_values.h"
#include "tutti.h"

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc != 4) {
    fprintf(stderr, "usage: coll_linger BATCHES REDUCES BYTES\n");
    return 2;
  }
  const int batches = atoi(argv[1]), reduces = atoi(argv[2]);
  const size_t count = (size_t)atol(argv[3]) / sizeof(int32_t);
  tutti_comm* comm = NULL;
  int rank = 0, size = 0, failures = 0;
  if (!cv_join_world(&comm, &rank, &size)) return 1;
  int32_t* send = malloc(count * sizeof *send);
  int32_t* recv = malloc(count * sizeof *recv);
  for (int batch = 0; batch < batches && failures == 0; ++batch) {
    for (int r = 0; r < reduces && failures == 0; ++r) {
      const int32_t round = batch * reduces + r;
      for (size_t i = 0; i < count; ++i) send[i] = rank + round + (int32_t)i;
      if (tutti_reduce(comm, send, recv, count, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, 0, NULL) != TUTTI_OK) {
        printf("FAIL rank %d linger: reduce %d: %s\n", rank, round, tutti_last_error());
        ++failures;
        break;
      }
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
    if (failures == 0 && tutti_all_reduce(comm, &one, &ranks, 1, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL) != TUTTI_OK) {
      printf("FAIL rank %d linger: all_reduce after batch %d: %s\n", rank, batch, tutti_last_error());
      ++failures;
    } else if (failures == 0 && ranks != size) {
      printf("FAIL rank %d linger: all_reduce after batch %d gave %d, want %d\n", rank, batch, ranks, size);
      ++failures;
    }
  }
  free(send);
  free(recv);
  if (tutti_comm_destroy(comm) != TUTTI_OK) ++failures;
  printf("coll_linger: rank %d, %d reduces, %d failures\n", rank, batches * reduces, failures);
  return failures > 0 ? 1 : 0;
}
