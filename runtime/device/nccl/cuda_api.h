// The CUDA runtime, loaded at run time (dlopen) rather than linked, so that
// libtutti.so loads and runs host collectives on machines with the CUDA toolkit but no
// driver (CI), or with no CUDA at all. Only runtime/device/nccl includes this.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace tutti::device::nccl {

struct CudaApi {
  decltype(&::cudaGetDeviceCount) GetDeviceCount;
  decltype(&::cudaGetDevice) GetDevice;
  decltype(&::cudaSetDevice) SetDevice;
  decltype(&::cudaGetDeviceProperties) GetDeviceProperties;
  decltype(&::cudaGetErrorString) GetErrorString;
  decltype(&::cudaPointerGetAttributes) PointerGetAttributes;
  decltype(&::cudaStreamCreateWithFlags) StreamCreateWithFlags;
  decltype(&::cudaStreamDestroy) StreamDestroy;
  decltype(&::cudaStreamWaitEvent) StreamWaitEvent;
  decltype(&::cudaEventCreateWithFlags) EventCreateWithFlags;
  decltype(&::cudaEventDestroy) EventDestroy;
  decltype(&::cudaEventRecord) EventRecord;
  decltype(&::cudaEventQuery) EventQuery;
  decltype(&::cudaMemcpyAsync) MemcpyAsync;
  decltype(&::cudaHostAlloc) HostAlloc;
  decltype(&::cudaFreeHost) FreeHost;

  // "cudaSetDevice(3): invalid device ordinal" from a failed call's code; for messages.
  std::string describe(const char* call, cudaError_t error) const;
  // Throws Error(kTransport) "<what>: <call>: <CUDA's message>" unless error is cudaSuccess.
  void check(cudaError_t error, const char* call, const std::string& what) const;
};

// Whether the CUDA driver is already loaded in the process: CUDA is in use, so
// pointers may be device memory. Never loads anything.
bool cuda_in_use();

// The process's CUDA runtime, loaded on first use (libcudart.so.<the toolkit's major>),
// with a usable device: nullptr with *why_not set otherwise, e.g. "cudaGetDeviceCount:
// CUDA driver version is insufficient". Thread-safe; tried once per process.
const CudaApi* cuda_api(std::string* why_not);

}  // namespace tutti::device::nccl
