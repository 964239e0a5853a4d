/* coll_abort: tutti_comm_abort from another thread while the transports are busy, for
 * test_faults.c. Two ranks.
 *
 * Rank 0 posts an isend of 64 MiB that rank 1 never receives (a rendezvous transfer
 * left hanging in UCX), queues an asynchronous all_reduce of 4 MiB behind it, then
 * blocks in an all_reduce that rank 1 never joins (a wait in shared memory); a thread
 * of its own calls tutti_comm_abort 300 ms later. Every one of them must end with
 * TUTTI_ERR_ABORTED, promptly, and destroying the communicator must not hang.
 * Rank 1 computes for 1.5 s without calling tutti, then finds that rank 0 is gone.
 *
 * Lines: "ABORT_CALL <ms>" (how long tutti_comm_abort took), "BLOCKING <status> <ms>"
 * (when the blocking call returned, counted from the abort), "ISEND <status>",
 * "ASYNC <status>", "DESTROY <ms>", and on rank 1 "AFTER <status> <message>".
 * Exits 0 when every status is the expected one. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "coll_values.h"
#include "tutti.h"

static tutti_comm* comm;
static volatile long long abort_at_ms;

static long long now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static void* aborter(void* unused) {
  (void)unused;
  nanosleep(&(struct timespec){0, 300000000}, NULL);
  abort_at_ms = now_ms();
  tutti_comm_abort(comm);
  printf("ABORT_CALL %lld\n", now_ms() - abort_at_ms);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int rank, size;
  if (!cv_join_world(&comm, &rank, &size) || size != 2) return 1;
  size_t big = (size_t)64 << 20, count = (size_t)1 << 20;
  char* payload = calloc(big, 1);
  float* send = calloc(count, sizeof(float));
  float* recv = calloc(count, sizeof(float));
  int ok = 1;
  if (rank == 0) {
    tutti_work* isend = NULL;
    tutti_work* async = NULL;
    ok &= tutti_send(comm, payload, big, TUTTI_DTYPE_UINT8, 1, 5, &isend) == TUTTI_OK;
    ok &= tutti_all_reduce(comm, send, recv, count, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &async) == TUTTI_OK;
    pthread_t thread;
    pthread_create(&thread, NULL, aborter, NULL);
    float one = 1, sum = 0;
    tutti_status status = tutti_all_reduce(comm, &one, &sum, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL);
    printf("BLOCKING %s %lld\n", tutti_status_name(status), now_ms() - abort_at_ms);
    ok &= status == TUTTI_ERR_ABORTED;
    pthread_join(thread, NULL);
    status = tutti_work_wait(isend, 10000);
    printf("ISEND %s\n", tutti_status_name(status));
    ok &= status == TUTTI_ERR_ABORTED;
    status = tutti_work_wait(async, 10000);
    printf("ASYNC %s\n", tutti_status_name(status));
    ok &= status == TUTTI_ERR_ABORTED;
    tutti_work_release(isend);
    tutti_work_release(async);
    long long start = now_ms();
    tutti_comm_destroy(comm);
    printf("DESTROY %lld\n", now_ms() - start);
  } else {
    long long end = now_ms() + 1500;
    volatile double x = 1;
    while (now_ms() < end) x = x * 1.0000001 + 1e-9;
    float one = 1, sum = 0;
    tutti_status status = tutti_all_reduce(comm, &one, &sum, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL);
    printf("AFTER %s %s\n", tutti_status_name(status), status == TUTTI_OK ? "" : tutti_last_error());
    ok = status == TUTTI_ERR_PEER_LOST;
    tutti_comm_destroy(comm);
  }
  free(payload);
  free(send);
  free(recv);
  return ok ? 0 : 1;
}
