#include "runtime/device/nccl/nccl_device_path.h"

#include <cstdio>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/device/nccl/on_device.h"

namespace tutti::device::nccl {
namespace {

std::string uuid_hex(const cudaUUID_t& uuid) {
  std::string text;
  char digits[3];
  for (char byte : uuid.bytes) {
    snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(byte));
    text += digits;
  }
  return text;
}

const char* memory_name(bool device) { return device ? "CUDA device" : "host"; }

}  // namespace

NcclDevicePath::NcclDevicePath(const device::DeviceSetup& setup, const CudaApi& cuda, const NcclApi* nccl,
                               std::string nccl_why_not, std::shared_ptr<Inherited> inherited)
    : setup_(setup),
      cuda_(cuda),
      nccl_(nccl),
      nccl_why_not_(std::move(nccl_why_not)),
      inherited_(std::move(inherited)),
      pinned_pool_(std::make_shared<PinnedPool>(cuda)) {
  if (inherited_) device_ = inherited_->device;
  device::WatchdogSetup watch;
  watch.loop = setup.loop;
  watch.fault = setup.fault;
  health::ActivityBoard* board = setup.board;
  watch.desync_report = [board](uint32_t seq) -> std::string {
    if (seq == 0) return "";
    std::string failed;
    std::string absent = board->absent_from(seq, Deadline::after_ms(2000), &failed);
    if (!absent.empty()) return concat("Ranks that had not joined it: ", absent);
    if (!failed.empty()) return concat("Every rank had joined it, but ranks ", failed, " failed it");
    return "Every rank had enqueued it: a GPU is slow, or NCCL's transport is stuck";
  };
  watchdog_ = std::make_unique<device::Watchdog>(std::move(watch), *this);
}

NcclDevicePath::~NcclDevicePath() {
  if (!watchdog_->drain(Deadline::after_ms(setup_.engine->op_timeout_ms() + kWatchdogGraceMs))) {
    log::warn(setup_.where, ": device operations were still running as the communicator was destroyed");
  }
  watchdog_.reset();
  // After a loss or an abort a peer may never finish its part: ncclCommFinalize would
  // wait for it.
  if (comm_ && setup_.fault->raised()) comm_->abort();
  comm_.reset();
  last_copy_back_.reset();
  if (pinned_ != nullptr) cuda_.FreeHost(pinned_);
  if (own_stream_ != nullptr) cuda_.StreamDestroy(own_stream_);
}

bool NcclDevicePath::is_device_pointer(const void* pointer, const char* api, const char* which) {
  cudaPointerAttributes attributes{};
  cudaError_t error = cuda_.PointerGetAttributes(&attributes, pointer);
  if (error != cudaSuccess) {
    fail(Status::kInvalidArgument,
         concat(api, ": cannot tell what memory ", which, " is in on ", setup_.where, " (",
                cuda_.describe("cudaPointerGetAttributes", error), "); state it with tutti_comm_set_memory"));
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

bool NcclDevicePath::is_device(const Call& call, const char* api) {
  if (memory_ == device::Memory::kHost || call.kind == Kind::kBarrier) return false;
  if (memory_ == device::Memory::kDevice) return true;
  const bool send = call.send != nullptr && is_device_pointer(call.send, api, "send");
  const bool recv = call.recv != nullptr && is_device_pointer(call.recv, api, "recv");
  if (call.send != nullptr && call.recv != nullptr && send != recv) {
    fail(Status::kInvalidArgument,
         concat(api, ": send is ", memory_name(send), " memory but recv is ", memory_name(recv), " memory on ",
                setup_.where, "; pass both buffers on the GPU or both on the host"));
  }
  return send || recv;
}

void NcclDevicePath::set_stream(void* stream) { user_stream_ = static_cast<cudaStream_t>(stream); }

void NcclDevicePath::set_device(int device) {
  int devices = 0;
  cuda_.check(cuda_.GetDeviceCount(&devices), "cudaGetDeviceCount", concat("tutti_comm_set_device on ", setup_.where));
  if (device < 0 || device >= devices) {
    fail(Status::kInvalidArgument, concat("tutti_comm_set_device: device ", device, " does not exist on ", setup_.where,
                                          "; this process sees ", devices, " CUDA devices (0 to ", devices - 1, ")"));
  }
  if (device_in_use_ && device != device_) {
    fail(Status::kUnsupported, concat("tutti_comm_set_device: ", setup_.where, " already works on CUDA device ",
                                      device_, "; set the device before its first call on device buffers"));
  }
  device_ = device;
}

void NcclDevicePath::decide_route(Deadline deadline) {
  if (inherited_) {
    // A split of an NCCL communicator: its ranks are some of the parent's, so the
    // parent's answer holds.
    route_ = inherited_->route;
    return;
  }
  cudaDeviceProp properties{};
  cuda_.check(cuda_.GetDeviceProperties(&properties, device_), "cudaGetDeviceProperties",
              concat("reading the GPU of ", setup_.where));
  device::RankGpu mine{uuid_hex(properties.uuid), nccl_ != nullptr ? nccl_->version : 0,
                       properties.major * 10 + properties.minor};
  const std::string prefix = concat(setup_.prefix, "cuda/gpu/");
  std::vector<std::string> keys;
  keys.reserve(setup_.size);
  for (int rank = 0; rank < setup_.size; ++rank) keys.push_back(concat(prefix, rank));
  std::vector<device::RankGpu> ranks(setup_.size);
  try {
    setup_.store->set(keys[setup_.rank], device::encode(mine), deadline);
    std::vector<std::string> values = setup_.store->multi_get(keys, deadline);
    for (int rank = 0; rank < setup_.size; ++rank) {
      auto gpu = device::decode_rank_gpu(values[rank]);
      if (!gpu) {
        fail(Status::kInternal, concat("malformed GPU record \"", values[rank], "\" of rank ", rank, " on ",
                                       setup_.where, "; please report this"));
      }
      ranks[rank] = *gpu;
    }
  } catch (const Error& error) {
    if (error.status() != Status::kTimeout) throw;
    fail(Status::kTimeout, concat("the first call on device buffers on ", setup_.where, " timed out: not every rank ",
                                  "made one (ranks exchange their GPUs then); make every rank's first device call the "
                                  "same collective"));
  }
  route_ = device::choose_route(ranks, nccl_why_not_);
}

void NcclDevicePath::make_ready(const char* api, Deadline deadline) {
  if (own_stream_ == nullptr) {
    // Blocking with respect to the legacy default stream: what a program queued there
    // (a cudaMemcpy, a kernel) comes before the collective, as torch makes its NCCL
    // stream wait for the current one. A program with streams of its own says which
    // with tutti_comm_set_stream.
    cuda_.check(cuda_.StreamCreateWithFlags(&own_stream_, cudaStreamDefault), "cudaStreamCreateWithFlags",
                concat(api, ": creating the stream of ", setup_.where));
    device_in_use_ = true;
  }
  if (!route_) decide_route(deadline);
  if (!route_->nccl || comm_) return;
  if (inherited_ && inherited_->comm) {
    comm_ = std::move(inherited_->comm);
  } else {
    comm_ = NcclComm::create(*nccl_, *setup_.store, concat(setup_.prefix, "nccl/id"), setup_.rank, setup_.size,
                             deadline, setup_.fault, setup_.where);
  }
  inherited_.reset();
  log::info(setup_.where, ": device buffers through NCCL ", route_->nccl_version, " on CUDA device ", device_);
}

std::shared_ptr<work::Work> NcclDevicePath::issue(const Call& call, const char* api, bool async) {
  if (watchdog_->broken()) watchdog_->rethrow(api);
  validate(call, setup_.rank, setup_.size, api);
  const int64_t timeout_ms = setup_.engine->op_timeout_ms();
  Deadline deadline = Deadline::after_ms(timeout_ms);
  if (device_ < 0) {
    int devices = 0;
    cuda_.check(cuda_.GetDeviceCount(&devices), "cudaGetDeviceCount", concat(api, " on ", setup_.where));
    device_ = setup_.local_rank % devices;
  }
  OnDevice on_device(cuda_, device_);
  make_ready(api, deadline);
  const char* why = route_->nccl ? device::nccl_lacks(call, *route_) : route_->why_staged.c_str();
  auto work = why == nullptr ? enqueue_nccl(call, api) : stage(call, api, why, async);
  if (async) return work;
  if (!work->wait_for(timeout_ms + kWatchdogGraceMs)) {
    fail(Status::kInternal, concat(api, " on ", setup_.where, ": the GPU watchdog did not end the operation within ",
                                   timeout_ms + kWatchdogGraceMs, " ms; is the event loop stuck? Please report this"));
  }
  if (work->status() != Status::kOk) fail(work->status(), work->message());
  return nullptr;
}

std::shared_ptr<work::Work> NcclDevicePath::watch(std::shared_ptr<work::Fence> fence, std::string label, uint32_t seq,
                                                  int64_t timeout_ms) {
  auto work = std::make_shared<work::Work>(fence);
  device::Watch entry;
  entry.fence = std::move(fence);
  entry.work = work;
  entry.deadline = Deadline::after_ms(timeout_ms);
  entry.timeout_ms = timeout_ms;
  entry.seq = seq;
  entry.label = std::move(label);
  watchdog_->watch(std::move(entry));
  return work;
}

std::shared_ptr<device::DevicePath::Inherited> NcclDevicePath::split(int color, int key, Deadline deadline) {
  if (!comm_ || watchdog_->broken()) return nullptr;
  OnDevice on_device(cuda_, device_);
  auto child = comm_->split(color, key, deadline, setup_.fault, setup_.where);
  if (!child) return nullptr;
  auto inherited = std::make_shared<Inherited>();
  inherited->comm = std::move(child);
  inherited->device = device_;
  inherited->route = *route_;
  return inherited;
}

std::string NcclDevicePath::async_error() { return comm_ ? comm_->async_error() : ""; }

void NcclDevicePath::abort() {
  if (comm_) comm_->abort();
}

}  // namespace tutti::device::nccl

namespace tutti::device {

std::unique_ptr<DevicePath> open_device_path(const DeviceSetup& setup, bool load,
                                             std::shared_ptr<DevicePath::Inherited> inherited) {
  if (!load && !inherited && !device::nccl::cuda_in_use()) return nullptr;
  std::string why;
  const device::nccl::CudaApi* cuda = device::nccl::cuda_api(&why);
  if (cuda == nullptr) {
    if (load) {
      fail(Status::kUnsupported, concat("CUDA is not available: ", why, " (", setup.where,
                                        "); device buffers need a CUDA device and its driver"));
    }
    log::warn(setup.where, ": CUDA is in use in this process but tutti cannot use it (", why,
              "); its calls treat every buffer as host memory");
    return nullptr;
  }
  std::string nccl_why;
  const device::nccl::NcclApi* nccl = device::nccl::nccl_api(&nccl_why);
  return std::make_unique<device::nccl::NcclDevicePath>(setup, *cuda, nccl, nccl_why, std::move(inherited));
}

}  // namespace tutti::device
