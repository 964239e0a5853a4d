#include "runtime/transport/core_sharing.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>

#include "runtime/common/cpus.h"

namespace tutti::transport {
namespace {

using Clock = std::chrono::steady_clock;

// A yield with nothing else to run is a bare system call; one that takes much longer ran
// another thread or process on this core. What a system call costs depends on the
// machine, not on the core state, so the bound is measured, once per process:
// kRanOthersOverSyscall times the fastest of kSyscallSamples system calls that never
// switch, and never below kYieldRanOthersFloor.
//   - On this project's VM (far state, 2026-11-28) a bare yield took 0.3-0.4 us, and
//     one that switched to a rank that yielded straight back 1.7-2.6 us: two context
//     switches, which no core state makes shorter. The bound used to be 3 us, which
//     counted those quick switches as "ran nobody", so 4 ranks on the 2 cores kept
//     finding their core unshared and spun 5 us at a time: 8-byte all_reduce on 2
//     emulated nodes over UCX's shared memory then took 16-105 us a call in half the
//     runs (7-10 in the others); with 1 us, 6-16.
//     A bare system call took less than that yield there, and the floor keeps the
//     bound at 1 us.
//   - On a later machine of the same kind (a PVM guest, Linux 6.18, 2026-11-28) every
//     system call went through the hypervisor: 1.0-1.1 us for getppid, 1.2-1.4 for a
//     bare yield, about 10 us for one that switched. With the fixed 1 us bound every
//     yield "ran others", so every wait yielded at once instead of spinning: 2 ranks
//     with a core each took 2.3-2.4 us for an 8-byte all_gather between emulated nodes
//     over UCX's shared memory, against Open MPI's 0.78-0.84; with the measured bound
//     (3.0-3.3 us there), 0.80.
constexpr auto kYieldRanOthersFloor = std::chrono::nanoseconds(1000);
constexpr int kRanOthersOverSyscall = 3;
constexpr int kSyscallSamples = 16;

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

// Moving off a shared core. Two ranks with a CPU each can still land on one: the
// scheduler wakes a thread on its waker's CPU, and two ranks that then wait for each
// other by yielding stay runnable and cache-hot there, which the kernel's balancer
// does not migrate for 10-15 ms, while the other CPU idles. 2 ranks on this project's
// 2-core VM, a sweep of 8-byte to 4 KiB all_gathers (a few hundred calls each): 5 runs
// in 40 took 3.3-3.9 us a call for several sizes instead of 0.10, every call two
// context switches; with this move, none in 40.
//
// So after a run of yields that ran someone else, the waiting thread moves itself to
// another CPU of its affinity (cpus.h), when the machine has no more runnable threads
// than CPUs: more would mean there is no idle CPU to find (more ranks than cores,
// another job), and moving would only shift the crowd, as 4 ranks on the 2 cores
// showed. The run's length is drawn at random, 1 to kMaxRun yields, so that of two
// ranks sharing a CPU one moves first, and the other's yields then find the CPU its
// own. The machine's load is read at most once a millisecond, less often while it
// stays busy; moves that follow one another back off from kFirstBackoffNs to
// kLastBackoffNs (where the load says a CPU is free that this process cannot have: a
// container, a CPU quota).
constexpr int kMaxRun = 32;
constexpr int64_t kFirstLoadLookNs = 1'000'000;
constexpr int64_t kLastLoadLookNs = 64'000'000;
constexpr int64_t kFirstBackoffNs = 1'000'000;
constexpr int64_t kLastBackoffNs = 10'000'000'000;

// Process-wide, as the verdict is; only waiting threads touch it, and a lost update
// costs a move made or skipped once.
struct Mover {
  std::atomic<uint64_t> random{0};
  std::atomic<int> run{0};     // yields in a row that ran someone else
  std::atomic<int> needed{0};  // the run that moves; 0 until drawn
  std::atomic<int64_t> last_load_look_ns{0};
  std::atomic<int64_t> load_look_every_ns{kFirstLoadLookNs};
  std::atomic<int64_t> last_move_ns{0};
  std::atomic<int64_t> backoff_ns{kFirstBackoffNs};
};
Mover mover;

// splitmix64, seeded by the process and the moment: the ranks of one job draw apart.
uint64_t next_random(int64_t now_ns) {
  uint64_t x = mover.random.load(std::memory_order_relaxed);
  if (x == 0) x = static_cast<uint64_t>(getpid()) << 32 ^ static_cast<uint64_t>(now_ns);
  x += 0x9E3779B97F4A7C15ull;
  mover.random.store(x, std::memory_order_relaxed);
  uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void after_shared_yield(int64_t now_ns) {
  int needed = mover.needed.load(std::memory_order_relaxed);
  if (needed == 0) {
    needed = 1 + static_cast<int>(next_random(now_ns) % kMaxRun);
    mover.needed.store(needed, std::memory_order_relaxed);
  }
  if (mover.run.fetch_add(1, std::memory_order_relaxed) + 1 < needed) return;
  mover.run.store(0, std::memory_order_relaxed);
  mover.needed.store(0, std::memory_order_relaxed);
  int64_t look_every = mover.load_look_every_ns.load(std::memory_order_relaxed);
  int64_t backoff = mover.backoff_ns.load(std::memory_order_relaxed);
  const int64_t since_move = now_ns - mover.last_move_ns.load(std::memory_order_relaxed);
  if (now_ns - mover.last_load_look_ns.load(std::memory_order_relaxed) < look_every || since_move < backoff) return;
  // A busy machine tends to stay busy: look less often while it does.
  const int runnable = runnable_threads();
  const bool busy = runnable < 0 || runnable > online_cpus();
  mover.load_look_every_ns.store(busy ? std::min(2 * look_every, kLastLoadLookNs) : kFirstLoadLookNs,
                                 std::memory_order_relaxed);
  mover.last_load_look_ns.store(now_ns, std::memory_order_relaxed);
  if (busy) return;
  if (move_to_another_cpu(next_random(now_ns)) < 0) return;
  // A move soon after the last one did not settle it: wait longer before the next.
  backoff = since_move < 4 * backoff ? std::min(2 * backoff, kLastBackoffNs) : kFirstBackoffNs;
  mover.backoff_ns.store(backoff, std::memory_order_relaxed);
  mover.last_move_ns.store(now_ns, std::memory_order_relaxed);
}

}  // namespace

void yield_core() {
  static const Clock::duration ran_others_after = yield_ran_others_after();
  const auto before = Clock::now();
  sched_yield();
  const auto after = Clock::now();
  const bool ran_others = after - before > ran_others_after;
  note_yield(ran_others);
  if (!ran_others) {
    mover.run.store(0, std::memory_order_relaxed);
    return;
  }
  after_shared_yield(std::chrono::duration_cast<std::chrono::nanoseconds>(after.time_since_epoch()).count());
}

std::chrono::nanoseconds yield_ran_others_after() {
  auto fastest = Clock::duration::max();
  for (int i = 0; i < kSyscallSamples; ++i) {
    const auto before = Clock::now();
    ::syscall(SYS_getppid);  // not cached by the C library, and never switches
    fastest = std::min(fastest, Clock::now() - before);
  }
  return std::max<std::chrono::nanoseconds>(kYieldRanOthersFloor, kRanOthersOverSyscall * fastest);
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
