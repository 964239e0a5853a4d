// An asynchronous send or receive on device buffers through the staging path
// (staging.cc). Its host part runs at once on a block of pinned memory of its own, so
// that the call returns without waiting for the peer: a program that posts irecv
// before isend on every rank, as the tutorials do, would otherwise wait for a send
// that no rank has posted yet. This is the fence its Work completes on: it passes once
// the host part is done and, for a receive, the block's copy to the GPU (enqueued on
// the communicator's stream when the host part is done, by whoever looks first: the
// watchdog, a test or a wait) has passed too. A failed host part fails the Work.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "runtime/device/nccl/cuda_api.h"
#include "runtime/device/nccl/event_fence.h"
#include "runtime/work/fence.h"
#include "runtime/work/work.h"

namespace tutti::device::nccl {

struct StagedTransfer {
  std::shared_ptr<work::Work> host;      // the host send or receive, on `block`
  std::shared_ptr<unsigned char> block;  // pinned memory (pinned_pool.h)
  void* device_recv = nullptr;           // a receive's device buffer; nullptr for a send
  size_t bytes = 0;
  int64_t host_bound_ms = 0;  // how long the host part can take at most (its timeout)
};

class StagedPointToPoint : public work::Fence {
 public:
  // device and stream: where a receive's copy goes. aborted: the watchdog's broken flag.
  StagedPointToPoint(const CudaApi& cuda, int device, cudaStream_t stream,
                     std::shared_ptr<const std::atomic<bool>> aborted, StagedTransfer transfer);
  // Waits for a host part still running (the watchdog can drop a pending operation
  // early, when it fails them all) before the block goes back to the pool.
  ~StagedPointToPoint() override;

  // The Work this is the fence of, which a failed host part fails.
  void belongs_to(const std::shared_ptr<work::Work>& work) { outer_ = work; }

  // Never throws: any thread, the event loop's included.
  bool reached() override;
  // Waits on the host for the host part (bounded by its timeout), then makes stream
  // wait for the copy to the GPU. Throws Error with the host part's failure.
  void make_stream_wait(void* stream) override;

 private:
  // Whether the host part is done and went well; on the first look after that, a
  // receive's copy to the GPU is enqueued. A failure fails the outer Work. Under mutex_.
  bool host_part_done_locked();

  const CudaApi& cuda_;
  int device_;
  cudaStream_t stream_;
  std::shared_ptr<const std::atomic<bool>> aborted_;
  StagedTransfer transfer_;
  std::weak_ptr<work::Work> outer_;
  std::mutex mutex_;
  std::shared_ptr<EventFence> copied_;  // a receive's copy to the GPU, once enqueued
};

}  // namespace tutti::device::nccl
