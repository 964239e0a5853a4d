// How ranks of a shared-memory group tell each other "I have reached step s". Each
// rank owns a Control in the segment; it alone writes its step entries, others only
// read them. Steps are numbered by the group, the same on every rank (all run the same
// collectives in the same order), and only grow.
//
// Step s of a rank is posted in its entry s % kStepEntries: one word with the step's
// number (mod 2^32) and the running collective's shape, written with one store, next
// to a small payload where the smallest all_reduce and broadcast put their data, so
// that a peer fetches step, shape and data with one load of one cache line. Entries
// are a quarter of a cache line, so that four consecutive steps share a line: each
// line a rank writes while a peer reads it costs a cross-core transfer, and the
// writer stalls once its store buffer fills behind it. This project's 2-core VM has
// hours when a round trip between its two cores takes 600 ns instead of 130; then a
// 2-rank 8-byte broadcast took 0.20-0.26 us with a 64-byte line per step, 0.11-0.12
// with 32-byte entries and 0.08-0.10 with 16-byte ones, and Open MPI, whose fast
// boxes put two such messages in a line, 0.11-0.14 (scripts/bench-vs-mpi.sh).
//
// Step numbers in the entries are kept mod 2^32 and compared as serial numbers: a
// peer's entry for step s holds s or a step kStepEntries apart from it (a rank never
// runs further ahead of another, segment_group.h), far inside the 2^31 that serial
// comparison needs. Entries start at 0, which every rank's first steps overwrite.
//
// Waiting spins briefly, then yields the core, then sleeps on a futex on the step (the
// word's low 32 bits), checking the OpContext (abort, deadline) every few milliseconds. A
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

#include "runtime/operation/op_context.h"

namespace tutti::transport::shm {

inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kStepBytes = 16;
inline constexpr size_t kInlineBytes = kStepBytes - sizeof(uint64_t);

struct alignas(kStepBytes) StepEntry {
  // The step (mod 2^32) in the low half, which is also the word a waiter sleeps on
  // with FUTEX_WAIT; in the high half, what the owner's collective at this step is
  // (which one, count, dtype, op, root, folded together with the collectives before
  // it): a peer that finds a different one knows the ranks called different
  // collectives, and fails instead of reading a block of another size.
  uint64_t word;
  unsigned char payload[kInlineBytes];
};

// Step entries per rank. A rank rewrites an entry only after every reader of its last
// step has left it (segment_group.h), so a broadcast's root whose data fits in an
// entry, its note or its cell can run up to kStepEntries - 1 calls ahead of its
// readers; Open MPI's runs ahead the same way, through a FIFO of many fragments. When ranks
// outnumber cores, each switch to a reader then serves many calls: an 8-byte
// broadcast at 4 ranks on this project's 2 cores took 3.6-4.5 us with 8 entries, 1.0
// with 64 and the same with 256 (Open MPI: 0.4-0.7); what is left is the cost of the
// call itself on each rank. 256 entries of 16 bytes take the 4 KiB that 64 lines took.
inline constexpr uint64_t kStepEntries = 256;

struct Control {
  StepEntry entries[kStepEntries];
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
// both counted from the start of the wait; and how many pauses a round of its spin
// takes (it reads the clock between rounds, and takes one round where it does not
// spin). Chosen per group from whether its ranks can each have a core (group.cc says
// why each value).
struct WaitPolicy {
  int64_t spin_ns;
  int64_t yield_ns;
  int round_pauses;
};

// Who a wait is for, spelled out only when a wait turns slow or fails: "rank 3" or
// "rank 3's chunk 2 of 5".
struct WaitLabel {
  int rank;
  size_t chunk;
  size_t chunks;
};

inline StepEntry& entry_of(Control& control, uint64_t step) { return control.entries[step % kStepEntries]; }
inline const StepEntry& entry_of(const Control& control, uint64_t step) { return control.entries[step % kStepEntries]; }

inline uint64_t step_word(uint64_t step, uint32_t shape) {
  return (static_cast<uint64_t>(shape) << 32) | static_cast<uint32_t>(step);
}
inline uint64_t load_word(const StepEntry& entry, std::memory_order order) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(entry.word)).load(order);
}
// Whether an entry's word shows `step` or a later one (serial comparison, above).
inline bool reached(uint64_t word, uint64_t step) {
  return static_cast<int32_t>(static_cast<uint32_t>(word) - static_cast<uint32_t>(step)) >= 0;
}
// Whether it shows exactly `step`.
inline bool at_step(uint64_t word, uint64_t step) { return static_cast<uint32_t>(word) == static_cast<uint32_t>(step); }
inline uint32_t shape_of(uint64_t word) { return static_cast<uint32_t>(word >> 32); }

void wake_sleepers(StepEntry& entry);
// Marks `mine` as having found a mismatch and wakes whoever sleeps on its entries.
void announce_mismatch(Control& mine);
uint64_t wait_slow(const Control& peer, uint64_t step, const WaitPolicy& policy, const OpContext& context,
                   const WaitLabel& label);

// Publishes `step` with `shape`: everything this rank wrote before is visible to
// whoever sees it. `fenced` as the owner announced in posts_fenced.
inline void post(Control& mine, uint64_t step, uint32_t shape, bool fenced) {
  StepEntry& entry = entry_of(mine, step);
  std::atomic_ref<uint64_t>(entry.word).store(step_word(step, shape), std::memory_order_release);
  if (fenced) std::atomic_thread_fence(std::memory_order_seq_cst);
  if (std::atomic_ref<uint32_t>(mine.sleepers).load(std::memory_order_relaxed) != 0) wake_sleepers(entry);
}

// Returns the word of `peer`'s entry for `step` once it shows that step or a later
// one (what the peer wrote before is then visible here). Throws what context.check
// throws, naming label, and kMismatch once the peer has announced a mismatch.
inline uint64_t wait_for(const Control& peer, uint64_t step, const WaitPolicy& policy, const OpContext& context,
                         const WaitLabel& label) {
  uint64_t word = load_word(entry_of(peer, step), std::memory_order_acquire);
  if (reached(word, step)) return word;
  return wait_slow(peer, step, policy, context, label);
}

}  // namespace tutti::transport::shm
