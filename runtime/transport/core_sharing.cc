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
// ran someone else. The last yield alone flipped with every yield that happened to
// run, or not to run, another: 4 ranks on 2 cores over UCX's shared memory then spun
// after every yield that found the other rank of its core asleep (16-byte all_gather
// 6.3-10.6 us a call against 4.8-4.9 now, Open MPI 3.3), and a rank with a core of its
// own must not start yielding because one yield ran one of its own threads (2 ranks,
// 8-byte all_reduce over UCX: unchanged, 230-240 ns).
constexpr int kRemembered = 8;
constexpr int kSharedWhen = 4;
std::atomic<uint32_t> recent{0};  // one bit per yield, newest lowest: 1 if it ran someone else

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
}

bool core_shared() { return std::popcount(recent.load(std::memory_order_relaxed)) >= kSharedWhen; }

}  // namespace tutti::transport
