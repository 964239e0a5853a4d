/* gpu_streams: a rank that checks stream order on device buffers. A memset enqueued on
 * the communicator's stream before a collective is what the collective reduces, without
 * the host synchronising; a second stream made to wait with tutti_work_wait_stream
 * reads the result; a blocking call returns with the result in place; host and device
 * buffers in one call are refused; the memory kind can be stated; a device that does
 * not exist is refused; a ring of irecv then isend on every rank completes. Prints "FAIL rank R: ..." per failure and
 * "gpu_streams: rank R ok" at the end; exits 1 on failure. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tutti.h"

static int rank, size, failures;

#define EXPECT(condition, ...)        \
  do {                                \
    if (!(condition)) {               \
      printf("FAIL rank %d: ", rank); \
      printf(__VA_ARGS__);            \
      printf("\n");                   \
      ++failures;                     \
    }                                 \
  } while (0)

#define CUDA(call) EXPECT((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

/* Every byte of an int32 set to b, as cudaMemset writes it. */
static int32_t bytes_of(int b) { return (int32_t)(0x01010101u * (uint32_t)b); }

static void expect_all(const int32_t* values, size_t n, int32_t want, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    if (values[i] != want) {
      EXPECT(0, "%s: element %zu is %d, expected %d", what, i, values[i], want);
      return;
    }
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  /* CUDA in use before the communicator, as in a program that sets up its model first. */
  if (cudaFree(NULL) != cudaSuccess) {
    printf("FAIL rank ?: CUDA: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  tutti_comm* comm = NULL;
  if (tutti_comm_init(NULL, &comm) != TUTTI_OK) {
    printf("FAIL rank ?: init: %s\n", tutti_last_error());
    return 1;
  }
  int32_t r32, s32;
  tutti_comm_rank(comm, &r32);
  tutti_comm_size(comm, &s32);
  rank = r32, size = s32;

  const size_t n = (size_t)1 << 20;
  const size_t bytes = n * sizeof(int32_t);
  int32_t* device = NULL;
  int32_t* host = malloc(bytes);
  cudaStream_t producer, consumer;
  CUDA(cudaMalloc((void**)&device, bytes));
  CUDA(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CUDA(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  EXPECT(tutti_comm_set_stream(comm, producer) == TUTTI_OK, "set_stream: %s", tutti_last_error());

  for (int round = 1; round <= 4; ++round) {
    CUDA(cudaMemsetAsync(device, round, bytes, producer));
    tutti_work* work = NULL;
    tutti_status status = tutti_all_reduce(comm, device, device, n, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, &work);
    EXPECT(status == TUTTI_OK, "all_reduce round %d: %s", round, tutti_last_error());
    if (status != TUTTI_OK) break;
    EXPECT(tutti_work_wait_stream(work, consumer) == TUTTI_OK, "wait_stream: %s", tutti_last_error());
    CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, consumer));
    CUDA(cudaStreamSynchronize(consumer));
    expect_all(host, n, size * bytes_of(round), "after wait_stream");
    EXPECT(tutti_work_wait(work, 10000) == TUTTI_OK, "wait: %s", tutti_last_error());
    int done = 0;
    EXPECT(tutti_work_test(work, &done) == TUTTI_OK && done == 1, "test after wait: done=%d", done);
    tutti_work_release(work);
  }

  /* Blocking: the result is in place when the call returns. */
  CUDA(cudaMemsetAsync(device, 2, bytes, producer));
  EXPECT(tutti_all_reduce(comm, device, device, n, TUTTI_DTYPE_INT32, TUTTI_OP_MAX, NULL) == TUTTI_OK,
         "blocking all_reduce: %s", tutti_last_error());
  CUDA(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  expect_all(host, n, bytes_of(2), "after a blocking all_reduce");

  /* The communicator's own stream. */
  EXPECT(tutti_comm_set_stream(comm, NULL) == TUTTI_OK, "set_stream(NULL): %s", tutti_last_error());
  CUDA(cudaMemset(device, 1, bytes));
  EXPECT(tutti_broadcast(comm, device, device, n, TUTTI_DTYPE_INT32, 0, NULL) == TUTTI_OK, "broadcast: %s",
         tutti_last_error());

  /* A ring of irecv then isend, as the tutorials post them, on every rank at once: an
   * asynchronous receive returns before its sender has sent (through the staging
   * path, where sends and receives go), or every rank would wait for the others. The
   * second round hands the receive to the consumer stream with wait_stream. */
  if (size > 1) {
    const size_t ring = 4096;
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int32_t* outgoing = NULL;
    CUDA(cudaMalloc((void**)&outgoing, ring * sizeof(int32_t)));
    for (int round = 0; round < 2; ++round) {
      CUDA(cudaMemset(outgoing, rank + 1 + round, ring * sizeof(int32_t)));
      CUDA(cudaMemset(device, 0, ring * sizeof(int32_t)));
      tutti_work* receiving = NULL;
      tutti_work* sending = NULL;
      EXPECT(tutti_recv(comm, device, ring, TUTTI_DTYPE_INT32, left, 7, &receiving) == TUTTI_OK, "irecv: %s",
             tutti_last_error());
      EXPECT(tutti_send(comm, outgoing, ring, TUTTI_DTYPE_INT32, right, 7, &sending) == TUTTI_OK, "isend: %s",
             tutti_last_error());
      if (!receiving || !sending) break;
      if (round == 0) {
        EXPECT(tutti_work_wait(receiving, 30000) == TUTTI_OK, "irecv wait: %s", tutti_last_error());
        CUDA(cudaMemcpy(host, device, ring * sizeof(int32_t), cudaMemcpyDeviceToHost));
      } else {
        EXPECT(tutti_work_wait_stream(receiving, consumer) == TUTTI_OK, "irecv wait_stream: %s", tutti_last_error());
        CUDA(cudaMemcpyAsync(host, device, ring * sizeof(int32_t), cudaMemcpyDeviceToHost, consumer));
        CUDA(cudaStreamSynchronize(consumer));
      }
      expect_all(host, ring, bytes_of(left + 1 + round),
                 round == 0 ? "after irecv, isend and wait" : "after wait_stream");
      EXPECT(tutti_work_wait(sending, 30000) == TUTTI_OK, "isend wait: %s", tutti_last_error());
      tutti_work_release(receiving);
      tutti_work_release(sending);
    }
    cudaFree(outgoing);
  }

  /* Host and device buffers in one call. */
  int32_t small[4] = {0};
  tutti_status mixed = tutti_all_reduce(comm, device, small, 4, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL);
  EXPECT(mixed == TUTTI_ERR_INVALID_ARGUMENT, "mixed buffers returned %s", tutti_status_name(mixed));
  EXPECT(strstr(tutti_last_error(), "send is CUDA device memory but recv is host memory") != NULL,
         "mixed buffers said: %s", tutti_last_error());

  /* Stated memory kinds. */
  EXPECT(tutti_comm_set_memory(comm, TUTTI_MEMORY_CUDA) == TUTTI_OK, "set_memory(CUDA): %s", tutti_last_error());
  EXPECT(tutti_all_reduce(comm, device, device, 16, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL) == TUTTI_OK,
         "all_reduce with TUTTI_MEMORY_CUDA: %s", tutti_last_error());
  EXPECT(tutti_comm_set_memory(comm, TUTTI_MEMORY_HOST) == TUTTI_OK, "set_memory(HOST): %s", tutti_last_error());
  int32_t one = 1, sum = 0;
  EXPECT(tutti_all_reduce(comm, &one, &sum, 1, TUTTI_DTYPE_INT32, TUTTI_OP_SUM, NULL) == TUTTI_OK && sum == size,
         "host all_reduce with TUTTI_MEMORY_HOST: sum %d: %s", sum, tutti_last_error());
  EXPECT(tutti_comm_set_memory(comm, TUTTI_MEMORY_AUTO) == TUTTI_OK, "set_memory(AUTO): %s", tutti_last_error());

  /* A device that does not exist. */
  int devices = 0;
  cudaGetDeviceCount(&devices);
  tutti_status bad = tutti_comm_set_device(comm, devices);
  EXPECT(bad == TUTTI_ERR_INVALID_ARGUMENT && strstr(tutti_last_error(), "does not exist") != NULL,
         "set_device(%d) returned %s: %s", devices, tutti_status_name(bad), tutti_last_error());

  tutti_comm_destroy(comm);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
  cudaFree(device);
  free(host);
  if (failures == 0) printf("gpu_streams: rank %d ok\n", rank);
  return failures == 0 ? 0 : 1;
}
