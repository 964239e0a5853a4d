// How a rank waits for its transport when a progress() moved nothing: spin, then
// yield the core, then sleep in the transport. One wait, from its first idle turn.
//
// Measured on this project's 2-core VM with all_reduce over UCX (docs/benchmarks.md,
// "Between nodes"):
//   - 4 ranks on the 2 cores: the rank waited for is usually runnable on this very
//     core. Spinning 20 us and then sleeping made an 8-byte all_reduce take 90 us over
//     TCP and 56 us over UCX's shared memory, longer spins far more (1 ms of spin: 1.4
//     ms); yielding instead brought them to 71-76 and 9-11 us. With nothing else to run,
//     a yield returns at once, so the wait is still a prompt poll.
//   - Whether a yield ran someone else is remembered, process-wide: while it does, the
//     next waits yield from their first idle call, as Open MPI does when it knows the
//     node is oversubscribed; while it does not, they first spin a few microseconds,
//     which keeps a shared-memory message (under 1 us) free of yields.
//   - After a millisecond the peer is late for a reason (computing, descheduled,
//     gone): the rank sleeps in the transport, which wakes it on arrival.
//   - Unless the transport is moving: a large message over UCX goes in fragments that
//     each need this rank's progress, and a wait that slept between them paid a
//     wake-up, and an arm of the worker (a few reads of its event fds), per fragment:
//     4 ranks on 2 emulated nodes over UCX's shared memory, 16 MiB all_reduce, took
//     6-8 ms or 18-25 ms by run, 40% of the slow runs' time in those reads; yielding
//     while it moves, 6.4-6.6 ms.
#pragma once

#include <chrono>

#include "runtime/transport/transport.h"

namespace tutti::collectives {

class TransportWait {
 public:
  // The longest one sleep in the transport lasts, so that abort and the deadline are
  // seen within a millisecond even if the transport never signals activity.
  static constexpr int kBlockMs = 1;

  explicit TransportWait(transport::Transport& transport) : transport_(transport) {}

  // One turn of a waiting loop: progresses the transport once; after a round that
  // moved nothing, idles (spins, yields or sleeps, by how long the wait has lasted);
  // after one that moved something, sends a wait that had gone to sleep back to
  // yielding, for another millisecond from now.
  void step() {
    if (transport_.progress()) {
      moved();
    } else {
      idle();
    }
  }

 private:
  void idle();
  void moved() {
    if (phase_ == Phase::kSleep) {
      phase_ = Phase::kYield;
      started_ = Clock::now();
    }
  }

  using Clock = std::chrono::steady_clock;
  enum class Phase { kSpin, kYield, kSleep };

  transport::Transport& transport_;
  Clock::time_point started_{};
  unsigned idle_calls_ = 0;
  Phase phase_ = Phase::kSpin;
};

}  // namespace tutti::collectives
