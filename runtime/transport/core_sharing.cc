#include "runtime/transport/core_sharing.h"

#include <sched.h>

#include <atomic>
#include <chrono>

namespace tutti::transport {
namespace {

// A yield with nothing else to run is a syscall, well under a microsecond; one that
// took longer than this ran another thread or process on this core.
constexpr auto kYieldRanOthers = std::chrono::microseconds(3);

std::atomic<bool> shared{false};

}  // namespace

void yield_core() {
  const auto before = std::chrono::steady_clock::now();
  sched_yield();
  shared.store(std::chrono::steady_clock::now() - before > kYieldRanOthers, std::memory_order_relaxed);
}

bool core_shared() { return shared.load(std::memory_order_relaxed); }

}  // namespace tutti::transport
