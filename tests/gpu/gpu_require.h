/* The GPU tests' gate: on a machine without enough CUDA devices (CI, most
 * workstations) a test says so and why on one line, and exits with the code ctest
 * counts as skipped (SKIP_RETURN_CODE 77 in tests/gpu/CMakeLists.txt), never as
 * passed. */
#ifndef TUTTI_TESTS_GPU_REQUIRE_H
#define TUTTI_TESTS_GPU_REQUIRE_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define TT_GPU_SKIP 77

/* The number of CUDA devices; exits with TT_GPU_SKIP when fewer than `needed`. */
static inline int tt_require_gpus(const char* test, int needed) {
  int devices = 0;
  cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess) {
    printf("SKIP: %s: no CUDA device (cudaGetDeviceCount: %s)\n", test, cudaGetErrorString(error));
    exit(TT_GPU_SKIP);
  }
  if (devices < needed) {
    printf("SKIP: %s: needs %d CUDA devices, this machine has %d\n", test, needed, devices);
    exit(TT_GPU_SKIP);
  }
  return devices;
}

#endif
