#include "runtime/collectives/transport_wait.h"

#include "runtime/transport/core_sharing.h"

namespace tutti::collectives {
namespace {

constexpr auto kSpin = std::chrono::microseconds(5);
constexpr auto kYield = std::chrono::milliseconds(1);
// The clock is read every kPollsPerClockRead idle calls while spinning: a read costs
// 30 ns in a VM, about as much as a shared-memory poll, so reading it every time
// would halve the polling rate.
constexpr unsigned kPollsPerClockRead = 16;

}  // namespace

void TransportWait::idle() {
  if (phase_ == Phase::kSpin) {
    // Spinning on a core shared with what this waits for would only delay it.
    const bool shared = transport::core_shared();
    if (!shared && ++idle_calls_ % kPollsPerClockRead != 0) return;
    const Clock::time_point now = Clock::now();
    if (started_ == Clock::time_point{}) started_ = now;
    if (!shared && now - started_ < kSpin) return;
    phase_ = Phase::kYield;
  }
  if (phase_ == Phase::kYield) {
    if (Clock::now() - started_ < kYield) {
      transport::yield_core();
      return;
    }
    phase_ = Phase::kSleep;
  }
  // Something was waiting to be progressed after all: the transport is moving.
  if (!transport_.wait_for_activity(kBlockMs)) moved();
}

}  // namespace tutti::collectives
