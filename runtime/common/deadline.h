// A point in time after which a wait gives up. Every blocking call in the runtime takes
// one, so no wait is ever unbounded.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace tutti {

// The kernel's coarse monotonic clock, in ms: 3 ns to read instead of 26 for the
// precise one in a VM, with a tick (a few ms) of resolution. steady_clock counts from
// the same epoch. Every operation reads it once as it starts (its deadline and its
// entry in the operation history) and once as it ends.
inline int64_t coarse_now_ms() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

// The precise monotonic clock (steady_clock), in ns: for waits that time their own
// turns, microseconds apart.
inline int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The coarse clock as a steady_clock time.
inline std::chrono::steady_clock::time_point coarse_now() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return std::chrono::steady_clock::time_point(std::chrono::seconds(now.tv_sec) +
                                               std::chrono::nanoseconds(now.tv_nsec));
}

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after_ms(int64_t ms) { return Deadline(Clock::now() + std::chrono::milliseconds(ms)); }
  // ms after now_ms, a reading of coarse_now_ms(): at most a tick early. For the
  // deadline every operation gets, of seconds, where the precise clock would cost a
  // tenth of a small message's latency.
  static Deadline after_ms_from(int64_t now_ms, int64_t ms) {
    return Deadline(Clock::time_point(std::chrono::milliseconds(now_ms + ms)));
  }
  // Already passed; reads no clock.
  static Deadline passed() { return Deadline(Clock::time_point()); }
  explicit Deadline(Clock::time_point at) : at_(at) {}

  Clock::time_point at() const { return at_; }
  bool expired() const { return Clock::now() >= at_; }
  // expired() by the coarse clock: up to a tick late, for a tenth of the cost. For
  // deadlines of seconds that a wait loop looks at on every turn.
  bool expired_coarse() const { return coarse_now() >= at_; }
  // Milliseconds left, never negative.
  int64_t remaining_ms() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    return left > 0 ? left : 0;
  }

 private:
  Clock::time_point at_;
};

}  // namespace tutti
