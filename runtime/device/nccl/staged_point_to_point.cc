#include "runtime/device/nccl/staged_point_to_point.h"

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/device/nccl/on_device.h"

namespace tutti::device::nccl {

StagedPointToPoint::StagedPointToPoint(const CudaApi& cuda, int device, cudaStream_t stream,
                                       std::shared_ptr<const std::atomic<bool>> aborted, StagedTransfer transfer)
    : cuda_(cuda), device_(device), stream_(stream), aborted_(std::move(aborted)), transfer_(std::move(transfer)) {}

StagedPointToPoint::~StagedPointToPoint() {
  if (transfer_.host->wait_for(transfer_.host_bound_ms)) return;
  // Still writing into the block past its own timeout: the block must not be reused.
  log::warn("a staged send or receive was still running ", transfer_.host_bound_ms,
            " ms after its communicator dropped it; its pinned block is left allocated");
  // Leaked on purpose; should even this small allocation fail, the process ends rather
  // than let the GPU write into memory handed out again.
  new std::shared_ptr<unsigned char>(std::move(transfer_.block));  // NOLINT(bugprone-unhandled-exception-at-new)
}

bool StagedPointToPoint::host_part_done_locked() {
  const work::Work& host = *transfer_.host;
  if (!host.done()) return false;
  Status status = host.status();
  std::string message = host.message();
  if (status == Status::kOk && transfer_.device_recv != nullptr && copied_ == nullptr) {
    try {
      OnDevice on_device(cuda_, device_);
      cuda_.check(cuda_.MemcpyAsync(transfer_.device_recv, transfer_.block.get(), transfer_.bytes,
                                    cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpyAsync", "copying a staged receive to the GPU");
      copied_ = std::make_shared<EventFence>(cuda_, stream_, aborted_);
    } catch (const Error& error) {
      status = error.status();
      message = error.what();
    }
  }
  if (status == Status::kOk) return true;
  if (auto outer = outer_.lock()) outer->complete(status, message);
  return false;
}

bool StagedPointToPoint::reached() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!host_part_done_locked()) return false;
  if (copied_ != nullptr && !copied_->reached()) return false;
  transfer_.block.reset();  // back to the pool: the GPU has what it held
  return true;
}

void StagedPointToPoint::make_stream_wait(void* stream) {
  transfer_.host->wait_for(transfer_.host_bound_ms);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!host_part_done_locked()) {
    auto outer = outer_.lock();
    if (outer && outer->done() && outer->status() != Status::kOk) fail(outer->status(), outer->message());
    fail(Status::kTimeout,
         concat("the host part of a staged send or receive did not end within ", transfer_.host_bound_ms, " ms"));
  }
  if (copied_ != nullptr) copied_->make_stream_wait(stream);
}

}  // namespace tutti::device::nccl
