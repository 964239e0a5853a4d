#include "runtime/work/work.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "runtime/trace/trace.h"

namespace tutti::work {

void Work::complete(Status status, std::string message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_.load(std::memory_order_relaxed)) return;
    status_ = status;
    message_ = std::move(message);
    done_.store(true, std::memory_order_release);
  }
  finished_.notify_all();
}

bool Work::wait_for(int64_t timeout_ms) {
  // A Work already done is no wait (bindings read a status so).
  if (done()) return true;
  if (!trace::on()) return wait_untraced(timeout_ms);
  // Traced: a wait that blocks, as an asynchronous span (several threads may wait on
  // one communicator's operations at once); it ends INPROGRESS when it timed out.
  static std::atomic<int64_t> waits{0};
  trace::Event event;
  event.phase = trace::Phase::kAsyncBegin;
  event.stamp = trace::stamp();
  event.track = static_cast<int16_t>(trace_track_);
  event.name = "wait";
  event.cat = "wait";
  event.id = (int64_t{1} << 62) | waits.fetch_add(1, std::memory_order_relaxed);
  trace::record(event);
  const bool ended = wait_untraced(timeout_ms);
  event.phase = trace::Phase::kAsyncEnd;
  event.stamp = trace::stamp();
  event.ended(ended ? status_ : Status::kInProgress);
  trace::record(event);
  return ended;
}

bool Work::wait_untraced(int64_t timeout_ms) {
  // Beyond this, a wait is as good as one until done, which the operation's own timeout
  // bounds; and milliseconds(INT64_MAX) overflows the nanoseconds that wait_for counts
  // in, so that the wait would end at once.
  if (timeout_ms > kLongestWaitMs) timeout_ms = -1;
  if (fence_) return wait_for_fence(timeout_ms);
  if (driver_) return wait_driving(timeout_ms);
  std::unique_lock<std::mutex> lock(mutex_);
  auto finished = [this] { return done_.load(std::memory_order_relaxed); };
  if (timeout_ms < 0) {
    finished_.wait(lock, finished);
    return true;
  }
  return finished_.wait_for(lock, std::chrono::milliseconds(timeout_ms), finished);
}

bool Work::wait_driving(int64_t timeout_ms) {
  // While the communicator runs other operations, the one running them completes this
  // one too (the executor's thread progresses what is in flight between its jobs):
  // sleep a millisecond at a time, then try to drive again.
  using Clock = std::chrono::steady_clock;
  const auto give_up = timeout_ms < 0 ? Clock::time_point() : Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    const int64_t left_ms =
        timeout_ms < 0 ? -1 : std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
    if (timeout_ms >= 0 && left_ms <= 0) {
      driver_->drive(*this, 0);
      return done();
    }
    if (driver_->drive(*this, left_ms)) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait_for(lock, std::chrono::milliseconds(1), [this] { return done_.load(std::memory_order_relaxed); });
  }
  return true;
}

bool Work::wait_for_fence(int64_t timeout_ms) {
  // Polls the event: a small message's whole latency is a few microseconds, which a
  // sleep would swamp. After a short spin it yields, then sleeps on the condition
  // variable in short slices, where the watchdog's failure wakes it.
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto spin_until = start + std::chrono::microseconds(50);
  const auto yield_until = start + std::chrono::milliseconds(2);
  const auto give_up = start + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  while (!done()) {
    if (fence_->reached()) {
      complete(Status::kOk);
      break;
    }
    const auto now = Clock::now();
    if (timeout_ms >= 0 && now >= give_up) return false;
    if (now < spin_until) continue;
    if (now < yield_until) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait_for(lock, std::chrono::microseconds(200), [this] { return done_.load(std::memory_order_relaxed); });
  }
  return true;
}

}  // namespace tutti::work
