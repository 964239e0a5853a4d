// The state of one operation, shared by the thread that runs it and the threads that
// wait on it (tutti_work is a handle to one). It completes exactly once, with a status
// and, on failure, a message; waiting never changes it, so a wait that times out
// leaves the operation valid and running.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/common/status.h"

namespace tutti::work {

class Work : public std::enable_shared_from_this<Work> {
 public:
  // Records the outcome and wakes every waiter. Only the first call counts.
  void complete(Status status, std::string message = {});

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Waits at most timeout_ms (negative: until done); true once done.
  bool wait_for(int64_t timeout_ms);

  // Valid once done().
  Status status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable finished_;
  Status status_ = Status::kOk;
  std::string message_;
};

}  // namespace tutti::work
