/* 02_collectives: the collectives of the torch.distributed tutorial, one after the
 * other, on a vector of 4 numbers per rank. Each rank starts with [r, r, r, r] + the
 * index, and prints what it holds after each call.
 *
 * Run:   tutti launch -n 4 ./build/bin/02_collectives
 * Prints, among the lines of the other ranks:
 *   [0] all_reduce(sum):     [6 10 14 18]    (0+1+2+3 plus 4 * index)
 *   [0] broadcast(root 0):   [0 1 2 3]
 *   [0] all_gather:          [0 1 2 3] [1 2 3 4] [2 3 4 5] [3 4 5 6]
 *   [0] reduce_scatter(max): [3]             (the max of element 0 over the ranks)
 *   [0] reduce(sum, root 0): [6 10 14 18]   (root only; the others keep theirs)
 */
#include <stdio.h>

#include "tutti.h"

enum { N = 4 };

static int check(tutti_status status, const char* what) {
  if (status == TUTTI_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, tutti_status_name(status), tutti_last_error());
  return 1;
}

static void show(const char* what, const int32_t* values, int count) {
  char line[256];
  int used = snprintf(line, sizeof line, "%-20s [", what);
  for (int i = 0; i < count && used < (int)sizeof line - 16; ++i) {
    used += snprintf(line + used, sizeof line - used, i ? (i % N ? " %d" : "] [%d") : "%d", values[i]);
  }
  printf("%s]\n", line);
}

int main(void) {
  tutti_comm* world = NULL;
  if (check(tutti_comm_init(NULL, &world), "tutti_comm_init")) return 1;
  int32_t rank, size;
  tutti_comm_rank(world, &rank);
  tutti_comm_size(world, &size);

  int32_t mine[N], result[N], gathered[N * 64];
  for (int i = 0; i < N; ++i) mine[i] = rank + i;
  if (size > 64) return 1;

  if (check(tutti_all_reduce(world, mine, result, N, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL), "all_reduce")) return 1;
  show("all_reduce(sum):", result, N);

  /* Only the root's send buffer is read; every rank receives into result. */
  if (check(tutti_broadcast(world, mine, result, N, TUTTI_DTYPE_INT32, 0, NULL), "broadcast")) return 1;
  show("broadcast(root 0):", result, N);

  if (check(tutti_all_gather(world, mine, gathered, N, TUTTI_DTYPE_INT32, NULL), "all_gather")) return 1;
  show("all_gather:", gathered, N * size);

  /* Every rank contributes size blocks of one element; rank r keeps block r's max. */
  int32_t blocks[64];
  for (int r = 0; r < size; ++r) blocks[r] = rank + r;
  if (check(tutti_reduce_scatter(world, blocks, result, 1, TUTTI_DTYPE_INT32, TUTTI_OP_MAX, NULL), "reduce_scatter")) {
    return 1;
  }
  show("reduce_scatter(max):", result, 1);

  for (int i = 0; i < N; ++i) result[i] = mine[i];
  if (check(tutti_reduce(world, mine, result, N, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, 0, NULL), "reduce")) return 1;
  show("reduce(sum, root 0):", result, N);

  tutti_comm_destroy(world);
  return 0;
}
