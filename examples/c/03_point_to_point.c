/* 03_point_to_point: blocking send/recv around a ring, then the non-blocking form
 * (isend/irecv in MPI and torch.distributed): post both, do something else, test,
 * then wait with a timeout.
 *
 * Run:   tutti launch -n 3 ./build/bin/03_point_to_point
 * Prints, for each rank r:
 *   [r] blocking: got 100 + (r-1) from rank r-1
 *   [r] non-blocking: sent to r+1 and got 200 + (r-1) from r-1 after N polls
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>

#include "tutti.h"

static int check(tutti_status status, const char* what) {
  if (status == TUTTI_OK) return 0;
  fprintf(stderr, "%s failed: %s: %s\n", what, tutti_status_name(status), tutti_last_error());
  return 1;
}

int main(void) {
  tutti_comm* world = NULL;
  if (check(tutti_comm_init(NULL, &world), "tutti_comm_init")) return 1;
  int32_t rank, size;
  tutti_comm_rank(world, &rank);
  tutti_comm_size(world, &size);
  int32_t next = (rank + 1) % size, previous = (rank + size - 1) % size;

  /* Blocking: even ranks send first, odd ranks receive first, so no two ranks wait
   * on each other (the classic trap with blocking calls; a single rank talks to itself
   * through the non-blocking form below instead). */
  int64_t token = 100 + rank, got = -1;
  if (size > 1) {
    if (rank % 2 == 0) {
      if (check(tutti_send(world, &token, 1, TUTTI_DTYPE_INT64, next, 0, NULL), "send")) return 1;
      if (check(tutti_recv(world, &got, 1, TUTTI_DTYPE_INT64, previous, 0, NULL), "recv")) return 1;
    } else {
      if (check(tutti_recv(world, &got, 1, TUTTI_DTYPE_INT64, previous, 0, NULL), "recv")) return 1;
      if (check(tutti_send(world, &token, 1, TUTTI_DTYPE_INT64, next, 0, NULL), "send")) return 1;
    }
    printf("blocking: got %lld from rank %d\n", (long long)got, previous);
  }

  /* Non-blocking: every rank posts its receive and its send, then waits for both. The
   * buffers belong to the operations until they complete. */
  token = 200 + rank;
  got = -1;
  tutti_work* receiving = NULL;
  tutti_work* sending = NULL;
  if (check(tutti_recv(world, &got, 1, TUTTI_DTYPE_INT64, previous, 1, &receiving), "irecv")) return 1;
  if (check(tutti_send(world, &token, 1, TUTTI_DTYPE_INT64, next, 1, &sending), "isend")) return 1;
  /* test() never blocks: a rank can poll it between pieces of other work. */
  int done = 0, polls = 0;
  struct timespec pause = {0, 100000}; /* 0.1 ms of "other work" */
  while (!done && polls < 10000) {
    tutti_work_test(receiving, &done);
    ++polls;
    if (!done) nanosleep(&pause, NULL);
  }
  if (check(tutti_work_wait(receiving, 10000), "wait(irecv)")) return 1;
  if (check(tutti_work_wait(sending, 10000), "wait(isend)")) return 1;
  tutti_work_release(receiving);
  tutti_work_release(sending);
  printf("non-blocking: sent to %d and got %lld from %d after %d polls\n", next, (long long)got, previous, polls);

  tutti_comm_destroy(world);
  return 0;
}
