// The wall clock (CLOCK_REALTIME) since the epoch, for what other processes read: a
// monotonic clock counts from an epoch of each machine's own. Heartbeat clock samples,
// the store's last denial, job files, `tutti top`.
#pragma once

#include <chrono>
#include <cstdint>

namespace tutti {

inline int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int64_t wall_clock_ms() { return wall_clock_us() / 1000; }

}  // namespace tutti
