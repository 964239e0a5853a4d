// One NCCL communicator, made non-blocking (ncclConfig_t blocking = 0) so that its
// initialisation, like every wait in tutti, is bounded: the ranks exchange an
// ncclUniqueId through the rendezvous store, start the initialisation, and poll
// ncclCommGetAsyncError against the deadline and the communicator's fault.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/common/fault.h"
#include "runtime/device/nccl/nccl_api.h"
#include "runtime/store/client.h"

namespace tutti::device::nccl {

class NcclComm {
 public:
  // Collective over size ranks: rank 0 makes the id and publishes it under key. The
  // calling thread's current device is the communicator's. Throws kTimeout (a rank
  // never came), kTransport (NCCL failed), or the fault's status.
  static std::unique_ptr<NcclComm> create(const NcclApi& nccl, store::Client& store, const std::string& key, int rank,
                                          int size, Deadline deadline, const Fault* fault, const std::string& where);
  // Ends it: flushed and destroyed (bounded), or aborted if it was aborted or that fails.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // ncclCommSplit, with the same bound; nullptr for color < 0 (which still takes part).
  std::unique_ptr<NcclComm> split(int color, int key, Deadline deadline, const Fault* fault, const std::string& where);

  // Runs fn(handle) unless the communicator was aborted (then throws kAborted naming
  // what), so that an abort from the watchdog's thread never frees it under an enqueue.
  template <typename Fn>
  void use(const std::string& what, Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) fail_aborted(what);
    fn(comm_);
  }
  // The asynchronous error, "" while there is none (or while another thread holds it).
  // Never blocks.
  std::string async_error();
  // ncclCommAbort, which stops the communicator's kernels and frees it. Once; any thread.
  void abort();
  // Waits until an enqueue that answered ncclInProgress has finished (non-blocking
  // communicators may), bounded by deadline. Throws kTransport or kTimeout.
  void wait_ready(Deadline deadline, const Fault* fault, const std::string& what);

 private:
  NcclComm(const NcclApi& nccl, ncclComm_t comm) : nccl_(nccl), comm_(comm) {}
  [[noreturn]] static void fail_aborted(const std::string& what);
  void abort_locked();

  const NcclApi& nccl_;
  ncclComm_t comm_;
  std::mutex mutex_;
  bool aborted_ = false;  // guarded by mutex_
};

}  // namespace tutti::device::nccl
