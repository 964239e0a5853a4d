#include "cuda_memory.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

void* bench_cuda_alloc(const char* program, size_t bytes) {
  void* buffer = NULL;
  cudaError_t error = cudaMalloc(&buffer, bytes);
  if (error == cudaSuccess) return buffer;
  fprintf(stderr, "%s: cudaMalloc(%zu): %s\n", program, bytes, cudaGetErrorString(error));
  return NULL;
}

void bench_cuda_free(void* self, void* buffer) {
  (void)self;
  cudaFree(buffer);
}

int bench_cuda_copy(const char* program, void* dst, const void* src, size_t bytes, int to_device) {
  cudaError_t error = cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
  /* From pageable memory cudaMemcpy returns once the data is staged, before it reaches
   * the device, and a non-blocking stream (nccl-bench's) does not wait for it: without
   * this, NCCL read half-copied buffers (seen on an H100 at 512 KiB and 2 MiB). */
  if (error == cudaSuccess && to_device) error = cudaDeviceSynchronize();
  if (error == cudaSuccess) return 0;
  fprintf(stderr, "%s: cudaMemcpy(%zu): %s\n", program, bytes, cudaGetErrorString(error));
  return -1;
}
