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
  if (error == cudaSuccess) return 0;
  fprintf(stderr, "%s: cudaMemcpy(%zu): %s\n", program, bytes, cudaGetErrorString(error));
  return -1;
}
