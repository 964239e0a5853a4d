/* Device memory for the harness's -m device (harness.h's device_alloc, device_free,
 * device_copy), shared by tutti-bench and nccl-bench where CUDA is found. Errors are
 * printed with `program` ("tutti-bench") and returned as NULL or -1. */
#pragma once

#include <stddef.h>

void* bench_cuda_alloc(const char* program, size_t bytes);
void bench_cuda_free(void* self, void* buffer);
/* to_device: host -> device, else device -> host. */
int bench_cuda_copy(const char* program, void* dst, const void* src, size_t bytes, int to_device);
