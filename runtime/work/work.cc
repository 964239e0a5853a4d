#include "runtime/work/work.h"

#include <chrono>

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
  if (done()) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  auto finished = [this] { return done_.load(std::memory_order_relaxed); };
  if (timeout_ms < 0) {
    finished_.wait(lock, finished);
    return true;
  }
  return finished_.wait_for(lock, std::chrono::milliseconds(timeout_ms), finished);
}

}  // namespace tutti::work
