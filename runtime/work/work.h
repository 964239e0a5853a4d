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
#include "runtime/work/fence.h"

namespace tutti::work {

class Work;

// Completes an operation on the thread that waits for it: the isend and irecv of
// tutti_send and tutti_recv, whose waiter moves the transport itself instead of
// sleeping until the executor's thread wakes it (a wake-up or two a message, which
// made an 8-byte exchange between 2 ranks 25-134 us where the transport takes 1-17).
class Driver {
 public:
  virtual ~Driver() = default;
  // Moves work forward until it is done or timeout_ms has passed (negative: until
  // done; 0: one look), or until other operations of the communicator are waiting for
  // it to let go; true if it ran at all. False when it could not run (the communicator
  // is busy with other operations, or going): whoever runs them completes work.
  virtual bool drive(const Work& work, int64_t timeout_ms) = 0;
};

class Work : public std::enable_shared_from_this<Work> {
 public:
  Work() = default;
  explicit Work(std::shared_ptr<Fence> fence) : fence_(std::move(fence)) {}
  // Records the outcome and wakes every waiter. Only the first call counts.
  void complete(Status status, std::string message = {});

  bool done() const { return done_.load(std::memory_order_acquire); }
  // done(), after completing a device operation whose fence the GPU has passed; for
  // tutti_work_test, which must not wait for the watchdog's next look either.
  bool test() {
    if (!done() && fence_ && fence_->reached()) complete(Status::kOk);
    if (!done() && driver_) driver_->drive(*this, 0);
    return done();
  }
  // Waits at most timeout_ms (negative: until done); true once done. A Work with a
  // fence completes here with kOk as soon as the GPU passes it, so a host waiting on a
  // device operation does not wait for the watchdog's next look.
  bool wait_for(int64_t timeout_ms);
  static constexpr int64_t kLongestWaitMs = int64_t{1} << 40;  // 35 years

  // The trace's track for this operation's waits (trace/trace.h): its communicator's.
  void set_trace_track(int track) { trace_track_ = track; }
  // Set before the Work is handed out: waits and tests then drive it (Driver above).
  void set_driver(std::shared_ptr<Driver> driver) { driver_ = std::move(driver); }

  // A device operation's fence (nullptr for host operations).
  Fence* fence() const { return fence_.get(); }

  // Valid once done().
  Status status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  bool wait_untraced(int64_t timeout_ms);
  bool wait_for_fence(int64_t timeout_ms);
  bool wait_driving(int64_t timeout_ms);

  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::condition_variable finished_;
  Status status_ = Status::kOk;
  std::string message_;
  std::shared_ptr<Fence> fence_;    // device operations only
  std::shared_ptr<Driver> driver_;  // sends and receives only
  int trace_track_ = 0;
};

}  // namespace tutti::work
