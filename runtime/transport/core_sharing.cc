#include "runtime/transport/core_sharing.h"

#include <sched.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>

namespace tutti::transport {
namespace {

// A yield with nothing else to run is a syscall, well under a microsecond; one that
// took longer than this ran another thread or process on this core.
constexpr auto kYieldRanOthers = std::chrono::microseconds(3);

// The core counts as shared while at least kSharedWhen of the last kRemembered yields
// ran someone else. By the last yield alone it flipped back with every yield that did
// not run another, which under EEVDF (Linux 6.6 on) is about two yields in three even
// beside a runnable rank: 4 ranks on 2 cores (4 emulated nodes, UCX's shared memory)
// then spun after most yields (16-byte all_gather 8.9-10.9 us a call against 4.8-5.3
// now, Open MPI 3.3). And a rank with a core of its own must not start yielding
// because one yield ran one of its own threads (2 ranks, 8-byte all_reduce over UCX:
// unchanged).
constexpr int kRemembered = 8;
constexpr int kSharedWhen = 4;
std::atomic<uint32_t> recent{0};  // one bit per yield, newest lowest: 1 if it ran someone else
// Its verdict, worked out once per yield (a syscall already) rather than at each read:
// every idle poll of a wait reads it.
std::atomic<bool> shared{false};

}  // namespace

void yield_core() {
  const auto before = std::chrono::steady_clock::now();
  sched_yield();
  note_yield(std::chrono::steady_clock::now() - before > kYieldRanOthers);
}

void note_yield(bool ran_others) {
  // Only the waiting threads yield, and a lost update only forgets one yield.
  const uint32_t kept =
      (recent.load(std::memory_order_relaxed) << 1 | (ran_others ? 1u : 0u)) & ((1u << kRemembered) - 1);
  recent.store(kept, std::memory_order_relaxed);
  shared.store(std::popcount(kept) >= kSharedWhen, std::memory_order_relaxed);
}

bool core_shared() { return shared.load(std::memory_order_relaxed); }

}  // namespace tutti::transport
