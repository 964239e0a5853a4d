// A point in time after which a wait gives up. Every blocking call in the runtime takes
// one, so no wait is ever unbounded.
#pragma once

#include <chrono>
#include <cstdint>

namespace tutti {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after_ms(int64_t ms) { return Deadline(Clock::now() + std::chrono::milliseconds(ms)); }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_; }
  // Milliseconds left, never negative.
  int64_t remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    return left > 0 ? left : 0;
  }

 private:
  Clock::time_point at_;
};

}  // namespace tutti
