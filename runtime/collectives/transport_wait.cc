#include "runtime/collectives/transport_wait.h"

#include <sched.h>

#include <atomic>

namespace tutti::collectives {
namespace {

constexpr auto kSpin = std::chrono::microseconds(5);
constexpr auto kYield = std::chrono::milliseconds(1);
// The clock is read every kPollsPerClockRead idle calls while spinning: a read costs
// 30 ns in a VM, about as much as a shared-memory poll, so reading it every time
// would halve the polling rate.
constexpr unsigned kPollsPerClockRead = 16;
// A yield with nothing else to run is a syscall, well under a microsecond; one that
// took longer than this ran another thread or process on this core.
constexpr auto kYieldRanOthers = std::chrono::microseconds(3);

// Whether the last yield of any wait in this process ran someone else: the core is
// shared with what the waits wait for, and spinning first would only delay it.
std::atomic<bool> core_shared{false};

}  // namespace

void TransportWait::idle() {
  if (phase_ == Phase::kSpin) {
    const bool shared = core_shared.load(std::memory_order_relaxed);
    if (!shared && ++idle_calls_ % kPollsPerClockRead != 0) return;
    const Clock::time_point now = Clock::now();
    if (started_ == Clock::time_point{}) started_ = now;
    if (!shared && now - started_ < kSpin) return;
    phase_ = Phase::kYield;
  }
  if (phase_ == Phase::kYield) {
    const Clock::time_point before = Clock::now();
    if (before - started_ < kYield) {
      sched_yield();
      core_shared.store(Clock::now() - before > kYieldRanOthers, std::memory_order_relaxed);
      return;
    }
    phase_ = Phase::kSleep;
  }
  transport_.wait_for_activity(kBlockMs);
}

}  // namespace tutti::collectives
