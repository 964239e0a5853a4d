// How ranks of a shared-memory group tell each other "I have reached step s". Each
// rank owns a Control in the segment; it alone writes its step counters, others only
// read them. Steps are numbered by the group, the same on every rank (all run the same
// collectives in the same order), and only grow.
//
// A step's counter lives on line s % kStepLines of its owner, next to a small payload:
// the smallest all_reduce and broadcast put their data there, so a peer fetches step
// and data with one cache-line transfer. Waiting for step s reads line s % kStepLines:
// the owner writes step s + kStepLines there only after reaching s, so ">= s" there
// means the owner has reached s.
//
// Waiting spins briefly, then yields the core, then sleeps on a futex on the counter's
// low 32 bits, checking the OpContext (abort, deadline) every few milliseconds. A
// poster calls FUTEX_WAKE only when a sleeper has registered: the waiter counts
// itself in `sleepers` before its last look at the counter, the poster stores the
// counter before it reads `sleepers`, so either the poster sees the sleeper or the
// sleeper sees the new step (and the kernel's own compare covers the gap between
// that look and the sleep). That needs a full fence between the store and the load
// on both sides. A fence on every post stalls the poster until its store reaches the
// other cores: on this project's 2-core VM it made a 2-rank barrier up to 50% slower
// (0.49 vs 0.32 us) and an 8-byte all_reduce at 4 ranks on the 2 cores 40% slower
// (10.5 vs 7.4 us). So posters skip it, and a waiter about to sleep fences both sides
// at once with membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), which makes every running
// thread of every registered process execute a full fence; a futex sleep costs far
// more anyway. A process that cannot register (old kernel, seccomp) fences its own
// posts, and says so in `posts_fenced`.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/collectives/op_context.h"

namespace tutti::transport::shm {

inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kInlineBytes = kCacheLine - 2 * sizeof(uint64_t);

struct alignas(kCacheLine) StepLine {
  uint64_t step;
  // What the owner's collective at this step is (which one, count, dtype, op, root,
  // folded into one word): a peer that finds a different one knows the ranks called
  // different collectives, and fails instead of reading a block of another size.
  uint64_t shape;
  unsigned char payload[kInlineBytes];
};

// Step lines per rank. A rank rewrites a line only after every reader of its last
// step has left it (segment_group.h), so a broadcast's root whose data fits in a line
// can run up to kStepLines - 1 calls ahead of its readers; Open MPI's runs ahead the
// same way, through a FIFO of many fragments. When ranks outnumber cores, each switch
// to a reader then serves many calls: an 8-byte broadcast at 4 ranks on this
// project's 2 cores took 3.6-4.5 us with 8 lines, 1.0 with 64 and the same with 256
// (Open MPI: 0.4-0.7); what is left is the cost of the call itself on each rank.
inline constexpr uint64_t kStepLines = 64;

struct Control {
  StepLine lines[kStepLines];
  alignas(kCacheLine) uint32_t sleepers;  // waiters registered for a FUTEX_WAKE
  // Set by the owner before its first post when it fences every post itself; 0 (the
  // safe reading before it is set) makes a waiter run the membarrier.
  uint32_t posts_fenced;
  // Set by the owner, never cleared, when it found that the ranks' calls differ: it
  // posts no step again, and a peer waiting for it learns why instead of timing out.
  // Needed because a rank that returns without waiting (a broadcast's root) can leave
  // a mismatch for its peers to find (segment_group.h).
  uint32_t mismatched;
};

// Registers this process for membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED); returns
// whether it could. Once is enough per process; calling again is cheap.
bool register_for_membarrier();

// How long a wait spins, then how long it keeps yielding the core, before it sleeps;
// both counted from the start of the wait. Chosen per group from whether its ranks
// can each have a core (group.cc says why each value).
struct WaitPolicy {
  int64_t spin_ns;
  int64_t yield_ns;
};

// Who a wait is for, spelled out only when a wait turns slow or fails: "rank 3" or
// "rank 3's chunk 2 of 5".
struct WaitLabel {
  int rank;
  size_t chunk;
  size_t chunks;
};

inline StepLine& line_of(Control& control, uint64_t step) { return control.lines[step % kStepLines]; }
inline const StepLine& line_of(const Control& control, uint64_t step) { return control.lines[step % kStepLines]; }

inline uint64_t load_step(const StepLine& line, std::memory_order order) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(line.step)).load(order);
}

void wake_sleepers(StepLine& line);
// Marks `mine` as having found a mismatch and wakes whoever sleeps on its lines.
void announce_mismatch(Control& mine);
void wait_slow(const Control& peer, uint64_t step, const WaitPolicy& policy,
               const collectives::OpContext& context, const WaitLabel& label);

// Publishes `step`: everything this rank wrote before is visible to whoever sees it.
// `fenced` as the owner announced in posts_fenced.
inline void post(Control& mine, uint64_t step, bool fenced) {
  StepLine& line = line_of(mine, step);
  std::atomic_ref<uint64_t>(line.step).store(step, std::memory_order_release);
  if (fenced) std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(mine.sleepers).load(std::memory_order_relaxed) != 0) wake_sleepers(line);
}

// Returns once `peer` has posted `step` (what it wrote before is then visible here).
// Throws what context.check throws, naming label, and kMismatch once the peer has
// announced a mismatch.
inline void wait_for(const Control& peer, uint64_t step, const WaitPolicy& policy,
                     const collectives::OpContext& context, const WaitLabel& label) {
  if (load_step(line_of(peer, step), std::memory_order_acquire) >= step) return;
  wait_slow(peer, step, policy, context, label);
}

}  // namespace tutti::transport::shm
