// The device path of runtime/device/device_path.h, over CUDA and NCCL loaded at run
// time: pointers classified with cudaPointerGetAttributes, collectives enqueued on the
// communicator's stream through NCCL, or through the staging path where NCCL cannot
// serve (route.h), each completing on a CUDA event that the watchdog watches.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/device/device_path.h"
#include "runtime/device/nccl/cuda_api.h"
#include "runtime/device/nccl/event_fence.h"
#include "runtime/device/nccl/nccl_api.h"
#include "runtime/device/nccl/nccl_comm.h"
#include "runtime/device/nccl/pinned_pool.h"
#include "runtime/device/route.h"
#include "runtime/device/watchdog.h"

namespace tutti::device {

struct DevicePath::Inherited {
  std::unique_ptr<device::nccl::NcclComm> comm;
  int device = 0;
  Route route;
};

}  // namespace tutti::device

namespace tutti::device::nccl {

class NcclDevicePath final : public device::DevicePath, public device::Watched {
 public:
  // nccl: nullptr where NCCL could not be loaded (nccl_why_not says why).
  NcclDevicePath(const device::DeviceSetup& setup, const CudaApi& cuda, const NcclApi* nccl, std::string nccl_why_not,
                 std::shared_ptr<Inherited> inherited);
  // Lets pending operations finish (bounded by their timeouts), then ends the NCCL
  // communicator and frees the stream and the pinned memory.
  ~NcclDevicePath() override;

  bool is_device(const Call& call, const char* api) override;
  std::shared_ptr<work::Work> issue(const Call& call, const char* api, bool async) override;
  void set_memory(device::Memory memory) override { memory_ = memory; }
  void set_stream(void* stream) override;
  void set_device(int device) override;
  std::shared_ptr<Inherited> split(int color, int key, Deadline deadline) override;

  // device::Watched
  std::string async_error() override;
  void abort() override;

 private:
  bool is_device_pointer(const void* pointer, const char* api, const char* which);
  // On first use: the device, the stream, the route (collective: ranks exchange their
  // GPUs' UUIDs) and, on the NCCL route, the NCCL communicator (collective).
  void make_ready(const char* api, Deadline deadline);
  void decide_route(Deadline deadline);
  cudaStream_t stream() const { return user_stream_ != nullptr ? user_stream_ : own_stream_; }
  // NCCL's part (enqueue.cc) and the staging path's (staging.cc); both return a Work
  // that completes on an event behind the operation on stream().
  std::shared_ptr<work::Work> enqueue_nccl(const Call& call, const char* api);
  // async: the caller gets a Work instead of waiting; only sends and receives then
  // return before their host part is done.
  std::shared_ptr<work::Work> stage(const Call& call, const char* api, const char* why, bool async);
  struct StagedCall {
    const char* api = nullptr;
    std::string label;  // "tutti_recv (staged through host memory) on comm ..."
    int64_t timeout_ms = 0;
    Deadline deadline = Deadline::passed();
  };
  std::shared_ptr<work::Work> stage_point_to_point(const Call& call, const StagedCall& staged);
  // Waits on the host for a copy between the GPU and pinned memory, bounded by the
  // call's deadline. Throws Error.
  void wait_for_copy(EventFence& fence, const StagedCall& staged, const char* what);
  // Copies bytes from the GPU to pinned memory on the stream, after the work queued
  // there, and waits for it the same way.
  void copy_to_host(void* host, const void* device, size_t bytes, const StagedCall& staged);
  // Pinned host memory for the staging path's blocking calls, grown as needed.
  void* pinned(size_t bytes);
  // Hands the operation's fence to the watchdog and returns its Work.
  std::shared_ptr<work::Work> watch(std::shared_ptr<work::Fence> fence, std::string label, uint32_t seq,
                                    int64_t timeout_ms);

  // How long past its own timeout a blocking call waits for the watchdog to fail it,
  // and a staged send or receive's host part has to end before the watchdog steps in.
  static constexpr int64_t kWatchdogGraceMs = 5000;

  device::DeviceSetup setup_;
  const CudaApi& cuda_;
  const NcclApi* nccl_;
  std::string nccl_why_not_;
  std::shared_ptr<Inherited> inherited_;  // until make_ready adopts it
  device::Memory memory_ = device::Memory::kAuto;
  int device_ = -1;             // -1 until chosen: local_rank % devices
  bool device_in_use_ = false;  // the stream or the NCCL communicator exists on it
  cudaStream_t own_stream_ = nullptr;
  cudaStream_t user_stream_ = nullptr;
  std::optional<device::Route> route_;
  std::set<std::string> logged_;  // the staging reasons already logged
  void* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
  std::shared_ptr<EventFence> last_copy_back_;  // the staging path's last, which reads pinned_
  std::shared_ptr<PinnedPool> pinned_pool_;     // the staged asynchronous sends and receives'
  std::unique_ptr<NcclComm> comm_;
  std::unique_ptr<device::Watchdog> watchdog_;
};

}  // namespace tutti::device::nccl
