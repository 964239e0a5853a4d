/* gpu_timeouts MODE: a device collective that cannot finish, and life afterwards.
 *   stall (1 rank): a host function holds the communicator's stream, so the all_reduce
 *     behind it never runs; the watchdog fails it with TIMEOUT after the op timeout and
 *     aborts the NCCL communicator; the communicator refuses later device calls; a new
 *     communicator then works.
 *   skip (2 ranks): rank 1 skips an all_reduce; rank 0 fails with TIMEOUT within the
 *     bound, naming rank 1; both then make a new communicator, which works.
 * The op timeout is 1500 ms. Prints "FAIL rank R: ..." per failure, "gpu_timeouts:
 * rank R MODE ok (timed out after N ms)" at the end; exits 1 on failure. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tutti.h"

#define OP_TIMEOUT_MS 1500

static int rank = -1, failures;

#define EXPECT(condition, ...)        \
  do {                                \
    if (!(condition)) {               \
      printf("FAIL rank %d: ", rank); \
      printf(__VA_ARGS__);            \
      printf("\n");                   \
      ++failures;                     \
    }                                 \
  } while (0)

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static atomic_int released;

/* Holds the stream until the test releases it (bounded: 60 s). */
static void CUDART_CB hold_stream(void* unused) {
  (void)unused;
  long long until = now_ms() + 60000;
  while (!atomic_load(&released) && now_ms() < until) {
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
}

static tutti_comm* join(void) {
  tutti_comm* comm = NULL;
  if (tutti_comm_init(NULL, &comm) != TUTTI_OK) {
    printf("FAIL rank %d: init: %s\n", rank, tutti_last_error());
    exit(1);
  }
  int32_t r32;
  tutti_comm_rank(comm, &r32);
  rank = r32;
  tutti_comm_set_op_timeout(comm, OP_TIMEOUT_MS);
  return comm;
}

/* A fresh communicator's all_reduce of one float per rank gives the world size. */
static void expect_new_comm_works(float* device, int size) {
  tutti_comm* fresh = join();
  float one = 1, sum = 0;
  cudaMemcpy(device, &one, sizeof one, cudaMemcpyHostToDevice);
  tutti_status status = tutti_all_reduce(fresh, device, device, 1, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL);
  EXPECT(status == TUTTI_OK, "all_reduce on a new communicator: %s", tutti_last_error());
  cudaMemcpy(&sum, device, sizeof sum, cudaMemcpyDeviceToHost);
  EXPECT(sum == (float)size, "all_reduce on a new communicator gave %g, expected %d", sum, size);
  tutti_comm_destroy(fresh);
}

static long long expect_timeout(tutti_status status, long long took, const char* needle) {
  EXPECT(status == TUTTI_ERR_TIMEOUT, "expected TIMEOUT, got %s: %s", tutti_status_name(status), tutti_last_error());
  EXPECT(took >= OP_TIMEOUT_MS - 100 && took < OP_TIMEOUT_MS + 8000, "the timeout came after %lld ms (bound %d ms)",
         took, OP_TIMEOUT_MS);
  EXPECT(strstr(tutti_last_error(), needle) != NULL, "expected \"%s\" in: %s", needle, tutti_last_error());
  return took;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "stall") != 0 && strcmp(mode, "skip") != 0) {
    fprintf(stderr, "usage: gpu_timeouts stall|skip\n");
    return 2;
  }
  if (cudaFree(NULL) != cudaSuccess) {
    printf("FAIL rank ?: CUDA: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  float* device = NULL;
  cudaMalloc((void**)&device, 1024 * sizeof(float));
  cudaMemset(device, 0, 1024 * sizeof(float));
  cudaDeviceSynchronize(); /* before the non-blocking stream of "stall" reads it */
  tutti_comm* comm = join();
  int32_t s32;
  tutti_comm_size(comm, &s32);
  long long took = -1;

  if (strcmp(mode, "stall") == 0) {
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    tutti_comm_set_stream(comm, stream);
    /* The first device call sets NCCL up; the second is the one held behind the host function. */
    EXPECT(tutti_all_reduce(comm, device, device, 1024, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL) == TUTTI_OK,
           "first all_reduce: %s", tutti_last_error());
    cudaLaunchHostFunc(stream, hold_stream, NULL);
    tutti_work* work = NULL;
    long long started = now_ms();
    tutti_status status = tutti_all_reduce(comm, device, device, 1024, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, &work);
    if (status == TUTTI_OK) status = tutti_work_wait(work, -1);
    took = expect_timeout(status, now_ms() - started, "timed out after 1500 ms on the GPU");
    EXPECT(strstr(tutti_last_error(), "NCCL communicator is aborted") != NULL, "no abort in: %s", tutti_last_error());
    tutti_work_release(work);
    atomic_store(&released, 1);
    cudaStreamSynchronize(stream);
    status = tutti_all_reduce(comm, device, device, 1024, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL);
    EXPECT(status != TUTTI_OK && strstr(tutti_last_error(), "unusable") != NULL,
           "a device call after the abort returned %s: %s", tutti_status_name(status), tutti_last_error());
    tutti_comm_destroy(comm);
    cudaStreamDestroy(stream);
  } else {
    EXPECT(s32 == 2, "skip needs 2 ranks, not %d", s32);
    /* Both make the first device call (it sets the path up); then rank 1 skips one. */
    EXPECT(tutti_all_reduce(comm, device, device, 1024, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL) == TUTTI_OK,
           "first all_reduce: %s", tutti_last_error());
    if (rank == 0) {
      long long started = now_ms();
      tutti_status status = tutti_all_reduce(comm, device, device, 1024, TUTTI_DTYPE_FLOAT32, TUTTI_OP_SUM, NULL);
      took = expect_timeout(status, now_ms() - started, "had not joined");
    } else {
      /* Stays in the communicator until rank 0 has timed out, so that it is a skip and
       * not a departure. */
      struct timespec wait = {OP_TIMEOUT_MS / 1000 + 2, 0};
      nanosleep(&wait, NULL);
    }
    tutti_comm_destroy(comm);
  }
  expect_new_comm_works(device, s32);
  cudaFree(device);
  if (failures == 0) printf("gpu_timeouts: rank %d %s ok (timed out after %lld ms)\n", rank, mode, took);
  return failures == 0 ? 0 : 1;
}
