// Why a communicator can no longer be used: tutti_comm_abort (kAborted), a lost peer
// or a lost store (kPeerLost). The first cause raised wins and stays; every wait loop
// polls raised(), a relaxed atomic load, so the fast path pays nothing for it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/status.h"

namespace tutti {

class Fault {
 public:
  // Records the cause unless one was raised already; returns whether this one won.
  // Any thread; never blocks on anything but a short internal lock.
  bool raise(Status status, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.load(std::memory_order_relaxed) != Status::kOk) return false;
    why_ = why;
    status_.store(status, std::memory_order_release);
    return true;
  }

  bool raised() const { return status_.load(std::memory_order_relaxed) != Status::kOk; }
  Status status() const { return status_.load(std::memory_order_acquire); }
  std::string why() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return why_;
  }

  // Throws the cause as an Error whose message is what (the operation and what it was
  // doing, e.g. "all_reduce #3 on ... while waiting for rank 2's data") and why.
  [[noreturn]] void rethrow(const std::string& what) const { fail(status(), concat(what, ": ", why())); }

 private:
  std::atomic<Status> status_{Status::kOk};
  mutable std::mutex mutex_;
  std::string why_;  // guarded by mutex_
};

}  // namespace tutti
