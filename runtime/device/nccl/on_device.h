// Makes a GPU current on the calling thread for a scope, and the previous one again
// after: the device path runs on the caller's threads and the event loop's, whose
// current device is theirs.
#pragma once

#include "runtime/device/nccl/cuda_api.h"

namespace tutti::device::nccl {

class OnDevice {
 public:
  // Throws Error(kTransport) where the device cannot be selected.
  OnDevice(const CudaApi& cuda, int device) : cuda_(cuda), device_(device) {
    cuda_.check(cuda_.GetDevice(&previous_), "cudaGetDevice", "selecting the communicator's GPU");
    if (previous_ != device_)
      cuda_.check(cuda_.SetDevice(device_), "cudaSetDevice", "selecting the communicator's GPU");
  }
  ~OnDevice() {
    if (previous_ != device_) cuda_.SetDevice(previous_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  const CudaApi& cuda_;
  int device_;
  int previous_ = 0;
};

}  // namespace tutti::device::nccl
