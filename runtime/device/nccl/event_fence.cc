#include "runtime/device/nccl/event_fence.h"

#include <chrono>
#include <thread>

#include "runtime/common/concat.h"

namespace tutti::device::nccl {

EventFence::EventFence(const CudaApi& cuda, cudaStream_t stream, std::shared_ptr<const std::atomic<bool>> aborted)
    : cuda_(cuda), aborted_(std::move(aborted)) {
  // No timing: an event that only orders is cheaper to record and to query.
  cuda_.check(cuda_.EventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags",
              "recording an operation's completion");
  cudaError_t error = cuda_.EventRecord(event_, stream);
  if (error != cudaSuccess) {
    cuda_.EventDestroy(event_);
    cuda_.check(error, "cudaEventRecord", "recording an operation's completion on the communicator's stream");
  }
}

EventFence::~EventFence() { cuda_.EventDestroy(event_); }

bool EventFence::reached() {
  if (aborted_->load(std::memory_order_acquire)) return false;
  return cuda_.EventQuery(event_) == cudaSuccess;
}

void EventFence::make_stream_wait(void* stream) {
  cuda_.check(cuda_.StreamWaitEvent(static_cast<cudaStream_t>(stream), event_, 0), "cudaStreamWaitEvent",
              "tutti_work_wait_stream");
}

bool EventFence::wait_host(Deadline deadline, const Fault& fault) {
  while (!reached()) {
    if (deadline.expired() || fault.raised() || aborted_->load(std::memory_order_acquire)) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

}  // namespace tutti::device::nccl
