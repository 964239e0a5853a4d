// The staging path of the device path: where NCCL cannot serve (route.h), the device
// buffers are copied to pinned host memory on the communicator's stream, the host
// collective runs on the copies, and the result is copied back on the same stream.
// The call returns once the host collective is done; the Work completes when the copy
// back has. Asynchronous sends and receives return at once (staged_point_to_point.h).
// Each reason is logged once per communicator.
#include <algorithm>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/device/buffer_spans.h"
#include "runtime/device/nccl/nccl_device_path.h"
#include "runtime/device/nccl/staged_point_to_point.h"

namespace tutti::device::nccl {

void* NcclDevicePath::pinned(size_t bytes) {
  if (bytes <= pinned_bytes_) return pinned_;
  // Doubling: a run of growing calls allocates a logarithmic number of times.
  const size_t grown = std::max(bytes, 2 * pinned_bytes_);
  if (pinned_ != nullptr) cuda_.FreeHost(pinned_);
  pinned_ = nullptr;
  pinned_bytes_ = 0;
  cuda_.check(cuda_.HostAlloc(&pinned_, grown, cudaHostAllocPortable), "cudaHostAlloc",
              concat("allocating ", grown, " bytes of pinned host memory for the staging path of ", setup_.where));
  pinned_bytes_ = grown;
  return pinned_;
}

void NcclDevicePath::wait_for_copy(EventFence& fence, const StagedCall& staged, const char* what) {
  if (fence.wait_host(staged.deadline, *setup_.fault)) return;
  if (setup_.fault->raised()) setup_.fault->rethrow(staged.label);
  if (watchdog_->broken()) watchdog_->rethrow(staged.api);
  fail(Status::kTimeout, concat(staged.label, ": ", what, " did not finish within ", staged.timeout_ms,
                                " ms; the GPU is busy with earlier work on the communicator's stream"));
}

void NcclDevicePath::copy_to_host(void* host, const void* device, size_t bytes, const StagedCall& staged) {
  cuda_.check(cuda_.MemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpyAsync",
              concat(staged.label, ": copying to host memory"));
  EventFence copied(cuda_, stream(), watchdog_->broken_flag());
  wait_for_copy(copied, staged, "the copy to host memory");
}

std::shared_ptr<work::Work> NcclDevicePath::stage(const Call& call, const char* api, const char* why, bool async) {
  if (logged_.insert(why).second) {
    log::warn(setup_.where, ": ", kind_name(call.kind), " on device buffers goes through pinned host ",
              "memory (the staging path): ", why);
  }
  StagedCall staged;
  staged.api = api;
  staged.timeout_ms = setup_.engine->op_timeout_ms();
  staged.deadline = Deadline::after_ms(staged.timeout_ms);
  staged.label = concat(api, " (staged through host memory) on ", setup_.where);
  if (async && is_point_to_point(call.kind)) return stage_point_to_point(call, staged);
  // The pinned memory is rewritten below: the last copy back out of it must be done.
  if (last_copy_back_) {
    wait_for_copy(*last_copy_back_, staged, "the previous copy back to the GPU");
    last_copy_back_.reset();
  }

  const device::BufferSpans spans = device::spans_of(call, setup_.rank, setup_.size);
  const char* send = static_cast<const char*>(call.send);
  char* recv = static_cast<char*>(call.recv);
  Call host = call;
  // The device bytes the host collective reads go to the start of the pinned memory.
  const char* copy_from = send;
  size_t copy_bytes = spans.send_bytes;
  char* base = nullptr;
  char* staged_recv = nullptr;
  if (spans.send_bytes > 0 && spans.recv_bytes > 0 && is_in_place(call, setup_.rank, setup_.size)) {
    // In place: stage the span that holds both, so that the host collective sees the
    // same overlap.
    const char* low = std::min<const char*>(send, recv);
    const char* high = std::max<const char*>(send + spans.send_bytes, recv + spans.recv_bytes);
    base = static_cast<char*>(pinned(static_cast<size_t>(high - low)));
    host.send = base + (send - low);
    host.recv = staged_recv = base + (recv - low);
    copy_from = low;
    copy_bytes = static_cast<size_t>(high - low);
  } else {
    base = static_cast<char*>(pinned(spans.send_bytes + spans.recv_bytes));
    host.send = spans.send_bytes > 0 ? base : nullptr;
    host.recv = staged_recv = spans.recv_bytes > 0 ? base + spans.send_bytes : nullptr;
  }
  if (copy_bytes > 0) {
    copy_to_host(base, copy_from, copy_bytes, staged);
  }
  setup_.engine->issue(host, api, false);
  if (spans.recv_bytes > 0) {
    cuda_.check(cuda_.MemcpyAsync(recv, staged_recv, spans.recv_bytes, cudaMemcpyHostToDevice, stream()),
                "cudaMemcpyAsync", concat(staged.label, ": copying the result back to the GPU"));
  }
  last_copy_back_ = std::make_shared<EventFence>(cuda_, stream(), watchdog_->broken_flag());
  return watch(last_copy_back_, staged.label, 0, staged.timeout_ms);
}

std::shared_ptr<work::Work> NcclDevicePath::stage_point_to_point(const Call& call, const StagedCall& staged) {
  const bool sending = call.kind == Kind::kSend;
  const device::BufferSpans spans = device::spans_of(call, setup_.rank, setup_.size);
  StagedTransfer transfer;
  transfer.bytes = sending ? spans.send_bytes : spans.recv_bytes;
  transfer.block = pinned_pool_->take(transfer.bytes, staged.label);
  transfer.host_bound_ms = staged.timeout_ms + kWatchdogGraceMs;
  Call host = call;
  if (sending) {
    if (transfer.bytes > 0) {
      // The send's data, as it is after the work queued before it on the stream.
      copy_to_host(transfer.block.get(), call.send, transfer.bytes, staged);
    }
    host.send = transfer.block.get();
  } else {
    host.recv = transfer.block.get();
    transfer.device_recv = call.recv;
  }
  transfer.host = setup_.engine->issue(host, staged.api, true);
  auto fence =
      std::make_shared<StagedPointToPoint>(cuda_, device_, stream(), watchdog_->broken_flag(), std::move(transfer));
  // The host part fails at its own timeout; the watchdog's deadline comes after it, so
  // that a send or receive that times out never aborts the NCCL communicator.
  auto work = watch(fence, staged.label, 0, staged.timeout_ms + kWatchdogGraceMs);
  fence->belongs_to(work);
  return work;
}

}  // namespace tutti::device::nccl
