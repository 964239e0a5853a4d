#include "runtime/device/nccl/nccl_comm.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"

namespace tutti::device::nccl {
namespace {

// How long ~NcclComm lets ncclCommFinalize flush before it aborts instead.
constexpr int64_t kFinalizeMs = 10000;

std::string to_hex(const ncclUniqueId& id) {
  std::string text;
  text.reserve(2 * sizeof id.internal);
  char digits[3];
  for (char byte : id.internal) {
    snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(byte));
    text += digits;
  }
  return text;
}

bool from_hex(const std::string& text, ncclUniqueId* id) {
  if (text.size() != 2 * sizeof id->internal) return false;
  for (size_t i = 0; i < sizeof id->internal; ++i) {
    unsigned value = 0;
    if (sscanf(text.c_str() + 2 * i, "%2x", &value) != 1) return false;
    id->internal[i] = static_cast<char>(value);
  }
  return true;
}

ncclConfig_t non_blocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

}  // namespace

std::unique_ptr<NcclComm> NcclComm::create(const NcclApi& nccl, store::Client& store, const std::string& key, int rank,
                                           int size, Deadline deadline, const Fault* fault, const std::string& where) {
  ncclUniqueId id;
  if (rank == 0) {
    nccl.check(nccl.GetUniqueId(&id), "ncclGetUniqueId", concat("creating the NCCL communicator of ", where), nullptr);
    store.set(key, to_hex(id), deadline);
  } else {
    std::string text;
    try {
      text = store.get(key, deadline);
    } catch (const Error& error) {
      if (error.status() != Status::kTimeout) throw;
      fail(Status::kTimeout, concat("creating the NCCL communicator of ", where, ": rank 0 did not publish its ",
                                    "ncclUniqueId in time; every rank must make its first device call together "
                                    "(the same collective)"));
    }
    if (!from_hex(text, &id)) {
      fail(Status::kInternal, concat("creating the NCCL communicator of ", where, ": malformed ncclUniqueId \"", text,
                                     "\" in the store; please report this"));
    }
  }
  ncclConfig_t config = non_blocking_config();
  ncclComm_t handle = nullptr;
  nccl.check(nccl.CommInitRankConfig(&handle, size, id, rank, &config), "ncclCommInitRankConfig",
             concat("creating the NCCL communicator of ", where), nullptr);
  std::unique_ptr<NcclComm> comm(new NcclComm(nccl, handle));
  comm->wait_ready(deadline, fault,
                   concat("initialising the NCCL communicator of ", where,
                          " (every rank must make its first device call together)"));
  return comm;
}

NcclComm::~NcclComm() {
  if (aborted_) return;  // ncclCommAbort freed it
  try {
    nccl_.check(nccl_.CommFinalize(comm_), "ncclCommFinalize", "ending the NCCL communicator", comm_);
    wait_ready(Deadline::after_ms(kFinalizeMs), nullptr, "ending the NCCL communicator");
    nccl_.CommDestroy(comm_);
  } catch (const Error& error) {
    // wait_ready aborts what it gives up on.
    log::warn(error.what(), "; it was aborted instead");
    abort();
  }
}

void NcclComm::fail_aborted(const std::string& what) {
  fail(Status::kAborted, concat(what,
                                ": the NCCL communicator was aborted; destroy this communicator and create a "
                                "new one"));
}

std::unique_ptr<NcclComm> NcclComm::split(int color, int key, Deadline deadline, const Fault* fault,
                                          const std::string& where) {
  ncclConfig_t config = non_blocking_config();
  ncclComm_t child = nullptr;
  nccl_.check(nccl_.CommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, &config), "ncclCommSplit",
              concat("splitting the NCCL communicator of ", where), comm_);
  // The parent is busy until the split is done, whether this rank joins a child or not.
  wait_ready(deadline, fault, concat("splitting the NCCL communicator of ", where));
  if (child == nullptr) return nullptr;
  std::unique_ptr<NcclComm> made(new NcclComm(nccl_, child));
  made->wait_ready(deadline, fault, concat("initialising the NCCL communicator split from ", where));
  return made;
}

std::string NcclComm::async_error() {
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || aborted_) return "";
  ncclResult_t state = ncclSuccess;
  ncclResult_t result = nccl_.CommGetAsyncError(comm_, &state);
  if (result != ncclSuccess) return nccl_.describe("ncclCommGetAsyncError", result, comm_);
  if (state == ncclSuccess || state == ncclInProgress) return "";
  return nccl_.describe("an asynchronous error", state, comm_);
}

void NcclComm::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  abort_locked();
}

void NcclComm::abort_locked() {
  if (aborted_) return;
  aborted_ = true;
  nccl_.CommAbort(comm_);
}

void NcclComm::wait_ready(Deadline deadline, const Fault* fault, const std::string& what) {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_) fail_aborted(what);
      ncclResult_t state = ncclSuccess;
      ncclResult_t result = nccl_.CommGetAsyncError(comm_, &state);
      if (result != ncclSuccess) state = result;
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) {
        std::string why = nccl_.describe("NCCL", state, comm_);
        abort_locked();
        fail(Status::kTransport, concat(what, ": ", why, "; the NCCL communicator was aborted"));
      }
      if (fault != nullptr && fault->raised()) {
        abort_locked();
        fault->rethrow(what);
      }
      if (deadline.expired()) {
        abort_locked();
        fail(Status::kTimeout, concat(what, ": did not finish in time; the NCCL communicator was aborted"));
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace tutti::device::nccl
