// A point in time after which a wait gives up. Every blocking call in the runtime takes
// one, so no wait is ever unbounded.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace tutti {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after_ms(int64_t ms) { return Deadline(Clock::now() + std::chrono::milliseconds(ms)); }
  // The same from the kernel's coarse monotonic clock, which steady_clock shares its
  // epoch with: 3 ns to read instead of 26 in a VM, and at most a tick (a few ms)
  // early. For the deadline every operation gets, of seconds, where the precise
  // clock would cost a tenth of a small message's latency.
  static Deadline after_ms_coarse(int64_t ms) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return Deadline(Clock::time_point(std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec) +
                                      std::chrono::milliseconds(ms)));
  }
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
