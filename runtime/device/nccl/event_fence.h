// A CUDA event recorded behind an operation on a stream: the fence its Work completes
// on (runtime/work/fence.h).
#pragma once

#include <atomic>
#include <memory>

#include "runtime/common/deadline.h"
#include "runtime/common/fault.h"
#include "runtime/device/nccl/cuda_api.h"
#include "runtime/work/fence.h"

namespace tutti::device::nccl {

class EventFence : public work::Fence {
 public:
  // Records a new event on stream (the current device must be the stream's).
  // aborted: the watchdog's broken flag. Throws Error(kTransport).
  EventFence(const CudaApi& cuda, cudaStream_t stream, std::shared_ptr<const std::atomic<bool>> aborted);
  ~EventFence() override;

  bool reached() override;
  void make_stream_wait(void* stream) override;
  // Blocks until the GPU passes the event, polling; false past deadline or once the
  // communicator's fault or the abort flag is raised. For the staging path.
  bool wait_host(Deadline deadline, const Fault& fault);

 private:
  const CudaApi& cuda_;
  cudaEvent_t event_ = nullptr;
  std::shared_ptr<const std::atomic<bool>> aborted_;
};

}  // namespace tutti::device::nccl
