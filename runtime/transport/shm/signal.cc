#include "runtime/transport/shm/signal.h"

#include <immintrin.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <climits>
#include <cstdio>
#include <ctime>

#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/transport/core_sharing.h"

namespace tutti::transport::shm {
namespace {

// The futex is the word's low half, the step, which is where it lies on a
// little-endian machine; FUTEX_WAIT compares only those 32 bits, and they change with
// every step.
static_assert(std::endian::native == std::endian::little);

// Longest single futex sleep: the OpContext is checked after each, so an abort (which
// sets a flag and wakes nobody) ends a wait within about this long.
constexpr int64_t kSleepSliceNs = 2'000'000;
// The sleep when neither side fenced (this process could not run the membarrier, the
// peer does not fence its posts): a wake-up can then be missed, and this bounds what
// that costs. Also the sleep while isends or irecvs are in flight, which only the
// waiter's progress calls move forward.
constexpr int64_t kUnfencedSliceNs = 100'000;

uint32_t* futex_word(const StepEntry& entry) { return reinterpret_cast<uint32_t*>(const_cast<uint64_t*>(&entry.word)); }

// The text context.check puts after "waiting for"; written into a caller's buffer so
// that a slow wait allocates nothing until it fails.
const char* describe(const WaitLabel& label, char* text, size_t capacity) {
  if (label.chunks > 1) {
    std::snprintf(text, capacity, "rank %d's chunk %zu of %zu", label.rank, label.chunk + 1, label.chunks);
  } else {
    std::snprintf(text, capacity, "rank %d", label.rank);
  }
  return text;
}

// Fences every running thread of every registered process (see signal.h).
bool fence_everyone() { return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0; }

}  // namespace

bool register_for_membarrier() { return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0; }

void wake_sleepers(StepEntry& entry) {
  // Not FUTEX_PRIVATE_FLAG: the sleepers are other processes mapping the same page.
  syscall(SYS_futex, futex_word(entry), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void announce_mismatch(Control& mine) {
  std::atomic_ref<uint32_t>(mine.mismatched).store(1, std::memory_order_seq_cst);
  for (StepEntry& entry : mine.entries) wake_sleepers(entry);
}

uint64_t wait_slow(const Control& peer, uint64_t step, const WaitPolicy& policy, const OpContext& context,
                   const WaitLabel& label) {
  const StepEntry& entry = entry_of(peer, step);
  uint64_t word;
  // Spin first: a peer on another core usually posts within a microsecond or so, far
  // sooner than a sleeping rank could be woken. The first round of pauses (64 with a
  // core of its own, 1-3 us by CPU) reads no clock, since a clock read (30 ns in a VM)
  // is a tenth of a small all_reduce; after that, the clock is read every round.
  int64_t started = 0;
  // A core shared with what this waits for (core_sharing.h) is handed over at once,
  // as a group with more ranks than cores does from the start (kSharedCore): emulated
  // nodes of 2 ranks fit 2 cores, yet 4 ranks share them, and a spin there cost 4-rank
  // 8-byte hierarchical all_reduces over 100 us now and then, against 16-25. In a group
  // with more ranks than cores, "at once" is a round of 4 pauses, not 64 (1-3 us, which
  // the rank waited for may need): 4 ranks on the 2 cores, 16-byte all_gather, 2.8-2.9
  // or 3.8-3.9 us a call (two modes, by run) against 3.5-3.7 or 7.0-7.4. Where the
  // group fits the cores and only yields found the core shared, the round stays 64:
  // 4 there made 4 ranks on 2 emulated nodes slower (8-byte all_reduce over TCP
  // 24.6-48 us against 22.9-43).
  const int64_t spin_ns = core_shared() ? 0 : policy.spin_ns;
  do {
    for (int i = 0; i < policy.round_pauses; ++i) {
      word = load_word(entry, std::memory_order_acquire);
      if (reached(word, step)) return word;
      _mm_pause();
    }
    if (started == 0) started = steady_now_ns();
  } while (steady_now_ns() - started < spin_ns);

  char text[64];
  const char* what = describe(label, text, sizeof text);
  // The peer found a mismatch and left: its step will not come. Checked only once the
  // spin is over, since a peer that posts in time has not left.
  auto check_peer = [&] {
    if (std::atomic_ref<uint32_t>(const_cast<uint32_t&>(peer.mismatched)).load(std::memory_order_relaxed) == 0) return;
    fail(Status::kMismatch,
         concat(context.label(), ": rank ", label.rank,
                " found that the ranks called different collectives, or this one or an earlier one with a different "
                "count, dtype, op or root, and left while this rank waited for ",
                what, "; every rank must make the same calls (TUTTI_CHECK=1 names the fields that differ)"));
  };
  // Then hand the core over: when ranks outnumber cores, the rank we wait for may be
  // runnable on this very core, and sched_yield runs it at once, where a futex sleep
  // and wake-up costs tens of microseconds (in a VM, over a hundred). With nothing
  // else to run, a yield returns at once, so this is still a prompt poll.
  while (steady_now_ns() - started < policy.yield_ns) {
    context.check(what);
    check_peer();
    context.progress_background();
    yield_core();
    word = load_word(entry, std::memory_order_acquire);
    if (reached(word, step)) return word;
  }

  auto sleepers = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(peer.sleepers));
  const bool peer_fences =
      std::atomic_ref<uint32_t>(const_cast<uint32_t&>(peer.posts_fenced)).load(std::memory_order_relaxed) != 0;
  for (;;) {
    context.check(what);
    check_peer();
    // Requests in flight need their transport driven: sleep in short slices then.
    const bool background = context.progress_background();
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    bool fenced = peer_fences || fence_everyone();
    word = load_word(entry, std::memory_order_seq_cst);
    if (!reached(word, step)) {
      timespec slice{0, fenced && !background ? kSleepSliceNs : kUnfencedSliceNs};
      syscall(SYS_futex, futex_word(entry), FUTEX_WAIT, static_cast<uint32_t>(word), &slice, nullptr, 0);
    }
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    word = load_word(entry, std::memory_order_acquire);
    if (reached(word, step)) return word;
  }
}

}  // namespace tutti::transport::shm
