// The Group of group.h over one shared segment (layout.h), split over three files:
// group.cc (creation, steps, failure), group_reduce.cc (the reductions) and
// group_copy.cc (the collectives that only move data).
//
// Every collective is a sequence of steps, numbered by the group and the same on every
// rank, and every rank posts every step when it arrives at it, after writing what it
// contributes to it. Two kinds of collective:
//   - symmetric ones (the reductions but a reduce of a few KiB, all_gather,
//     all_to_all, barrier): at each step every rank writes, posts, waits for every
//     rank's post, and reads;
//   - one-sided ones (broadcast, gather, scatter, a reduce of a few KiB): only the
//     ranks that need data wait, and only for the ranks that own it (a broadcast's or
//     scatter's readers for the root, a gather's or reduce's root for the others). An owner writes, posts and goes on:
//     a broadcast's root returns once its data is published, so that back-to-back
//     broadcasts overlap as Open MPI's do.
// Every step carries the running collective's shape, folded with the shape of every
// collective before it on this group: a waiter that finds its peer at the same step
// with another shape fails with kMismatch, and because the shapes are folded, a
// difference that a one-sided collective let pass (two ranks that each took itself
// for the root) is found at the next step that two ranks compare.
//
// Reuse rule. What a rank writes for step t (its step entry t % kStepEntries with its
// payload, note or cell, a slot) is read only by ranks that are at step t, and each reads it before it posts
// any later step: a symmetric step is read after the wait and before the next post,
// a one-sided reader reads before it goes on, and a rank's collective returns only
// after its last read. So once every other rank has posted t + 1, nothing written
// for step t is still being read, and a rank may write the same memory again. Every
// write therefore waits until every other rank has posted the buffer's release step
// (wait_released); a rank records what it knows (known_), so that when the rule holds
// already, as it always does within a symmetric collective (each write follows a wait
// for all at a later step), the check is one comparison. Release steps:
//   - a slot written for step t (slots double-buffered by the group's use count, the
//     same on every rank): t + 1;
//   - a rank's step entry posted at t: t + 1 where others read its payload or compare
//     its shape at exactly t (symmetric steps; an owner's step in a one-sided
//     collective, whose readers must find step, shape and payload of t, not a later
//     step), and nothing for a one-sided reader's own post, which others only compare
//     with ">=";
//   - the result areas are written only after a wait for every rank at a step of the
//     same collective, so every rank has left every earlier collective; within
//     reduce_pipelined its own argument holds.
// The ordering this gives across collectives of any kind: a broadcast's root that
// returned at step t may start an all_reduce at once, but it writes its step entry (or
// slot) again only after every reader has posted t + 1, which a reader does only
// after copying the broadcast out. A one-sided owner thus runs at most kStepEntries - 1
// steps ahead of its slowest reader with data in its step entry, note or cell, and one
// step with data in a slot (two slots per rank), and waits, with abort and deadline
// checks like every wait, when it would run further.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <list>
#include <string>
#include <vector>

#include "runtime/common/cpu_share.h"
#include "runtime/common/error.h"
#include "runtime/operation/timed_choice.h"
#include "runtime/transport/shm/group.h"
#include "runtime/transport/shm/layout.h"
#include "runtime/transport/shm/segment.h"
#include "runtime/transport/shm/signal.h"

namespace tutti::transport::shm {

class SegmentGroup final : public Group {
 public:
  SegmentGroup(Segment segment, const Layout& layout, int rank, int size);

  size_t mapped_bytes() const override {
    size_t bytes = segment_.bytes();
    for (const SharedRegion& region : regions_) bytes += region.segment.bytes();
    return bytes;
  }

  void all_reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                  const OpContext& context) override;
  void reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
              const OpContext& context) override;
  void broadcast(void* buffer, size_t bytes, int root, const OpContext& context) override;
  void all_gather(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) override;
  void reduce_scatter(const void* send, void* recv, size_t count_per_rank, Dtype dtype, ReduceOp op,
                      const OpContext& context) override;
  void gather(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) override;
  void scatter(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) override;
  void all_to_all(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) override;
  void barrier(const OpContext& context) override;
  void* allocate_shared(store::Client& store, const std::string& prefix, size_t bytes, Deadline deadline) override;
  bool free_shared(void* ptr) override;
  uint64_t in_place_runs() const override { return in_place_runs_; }
  uint64_t peer_read_runs() const override { return peer_read_runs_; }

 private:
  Control& control(int rank) const {
    return *reinterpret_cast<Control*>(base() + layout_.controls_offset + rank * Layout::kControlStride);
  }
  unsigned char* slot(int rank, uint64_t use) const {
    return base() + layout_.slots_offset + (2 * static_cast<size_t>(rank) + (use & 1)) * layout_.slot_bytes;
  }
  unsigned char* result(uint64_t use) const { return base() + layout_.results_offset + (use & 1) * layout_.slot_bytes; }
  unsigned char* base() const { return segment_.base(); }
  StepEntry& entry(int rank, uint64_t step) const { return entry_of(control(rank), step); }
  // Where `rank` puts `bytes` of data for `step` (bytes <= cell_bytes): in its step
  // entry when they fit there, else in the entry's note, else in its cell (layout.h).
  // All are rewritten only with the entry, so the entry's release step covers them
  // (the reuse rule above).
  unsigned char* step_data(int rank, uint64_t step, size_t bytes) const {
    if (bytes <= kInlineBytes) return entry(rank, step).payload;
    size_t index = static_cast<size_t>(rank) * kStepEntries + step % kStepEntries;
    if (bytes <= Layout::kNoteBytes) return base() + layout_.notes_offset + index * Layout::kNoteBytes;
    return base() + layout_.cells_offset + index * layout_.cell_bytes;
  }

  // Posts `step` in this rank's entry for it, once that entry may be rewritten;
  // `release` is the step every other rank must post before it may be rewritten again
  // (0: at once). See the reuse rule above.
  void post(uint64_t step, uint64_t release, const OpContext& context) {
    claim_entry(step, context);
    shm::post(control(rank_), step, posted_shape_, fenced_);
    entry_release_[step % kStepEntries] = release;
  }
  // Waits for every other rank's post of `step`, comparing shapes where a peer's entry
  // still shows that step.
  void wait_all(uint64_t step, const OpContext& context, size_t chunk, size_t chunks);
  // Waits for `owner`'s post of `step` in a one-sided collective, where its entry must
  // show exactly that step with this rank's shape (a later step means the owner did
  // not wait for this rank, so it is running another collective).
  void wait_owner(int owner, uint64_t step, const OpContext& context, size_t chunk, size_t chunks);
  [[noreturn]] void fail_mismatch(int rank, const OpContext& context) const;
  // One step toward `root` of `bytes` from every rank (bytes <= cell_bytes), one-sided:
  // a rank other than the root writes `own` where its step's data goes, posts and
  // returns false; the root posts, waits for each rank in turn and calls take(r, data)
  // with rank r's bytes (its own from `own`), then returns true. gather and a small
  // reduce take this step.
  template <typename Take>
  bool step_to_root(const void* own, size_t bytes, int root, const OpContext& context, Take&& take) {
    const uint64_t step = ++step_;
    if (rank_ != root) {
      claim_entry(step, context);
      std::memcpy(step_data(rank_, step, bytes), own, bytes);
      post(step, step + 1, context);
      return false;
    }
    post(step, 0, context);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) wait_owner(r, step, context, 0, 1);
      take(r, r == rank_ ? static_cast<const unsigned char*>(own) : step_data(r, step, bytes));
    }
    return true;
  }

  // Returns once every other rank has posted `step` (the reuse rule).
  void wait_released(uint64_t step, const OpContext& context) {
    if (step > known_) wait_released_slow(step, context);
  }
  void wait_released_slow(uint64_t step, const OpContext& context);
  // Before writing this rank's step entry of `step`, or any rank's slot of use's parity.
  void claim_entry(uint64_t step, const OpContext& context) {
    wait_released(entry_release_[step % kStepEntries], context);
  }
  void claim_slot(uint64_t use, const OpContext& context) { wait_released(slot_release_[use & 1], context); }
  // After step `step` wrote slot use `use`: nobody reads it once every rank has posted step + 1.
  void release_slot(uint64_t use, uint64_t step) { slot_release_[use & 1] = step + 1; }

  // The arguments of a call that every rank must pass alike; -1 where unused.
  struct Shape {
    uint64_t amount = 0;  // count, or bytes per rank
    int dtype = -1;
    int op = -1;
    int root = -1;
  };

  // Runs one collective: refuses to when an earlier one failed (the ranks' step counts
  // no longer agree), and marks the group unusable when this one fails. Every step it
  // posts carries `shape`, which wait_all compares with the peers'.
  template <typename Body>
  void run(const OpContext& context, const Shape& shape, Body&& body);
  [[noreturn]] void fail_unusable(const OpContext& context) const;

  // The chunk of one step of the data movers (group_copy.cc).
  size_t copy_chunk() const;
  void copy_out_blocks(unsigned char* out, const unsigned char* in, size_t offset, size_t n, uint64_t use,
                       size_t bytes_per_rank);

  // How reduce_scatter and all_to_all split a slot: into parts of part_bytes (whole
  // cache lines), one per destination rank, for ranks_per_step ranks at a time. All of
  // them where a slot holds a cache line per rank; else (past about 500 ranks) a
  // slot's worth, and each chunk takes `rounds` steps, round g serving ranks
  // [g * ranks_per_step, (g + 1) * ranks_per_step).
  struct SlotParts {
    size_t part_bytes = 0;
    int ranks_per_step = 0;
    int rounds = 0;
    int first(int round) const { return round * ranks_per_step; }
    int round_of(int rank) const { return rank / ranks_per_step; }
  };
  SlotParts parts_of_slot() const {
    const int per_step = static_cast<int>(std::min(static_cast<size_t>(size_), layout_.slot_bytes / kCacheLine));
    return {layout_.slot_bytes / static_cast<size_t>(per_step) / kCacheLine * kCacheLine, per_step,
            (size_ + per_step - 1) / per_step};
  }

  // `chunks` steps of the simple shape: write(c, use), post, wait for all, read(c, use).
  template <typename Write, typename Read>
  void steps(size_t chunks, const OpContext& context, Write&& write, Read&& read);
  // `chunks` one-sided steps toward `root`: a rank other than root write(c, use)s its
  // slot, posts and goes on; root posts, waits for every other rank's post and
  // read(c, use)s their slots. gather and reduce past a cell take them.
  template <typename Write, typename Read>
  void steps_to_root(size_t chunks, int root, const OpContext& context, Write&& write, Read&& read);
  // `chunks` one-sided steps from `root`: root write(c, use)s the slots, posts and goes
  // on; every other rank posts, waits for root's post and read(c, use)s. broadcast and
  // scatter past a cell take them.
  template <typename Write, typename Read>
  void steps_from_root(size_t chunks, int root, const OpContext& context, Write&& write, Read&& read);

  // The reductions' shapes: one handshake over the whole vector, the same chunk by
  // chunk, and the chunked pipeline; one_handshake says whether a vector of `bytes`
  // takes the first, reduce_large chooses between the others. root < 0 means every
  // rank receives the result. A reduce to one root takes reduce_to_root, one-sided,
  // in place of the first two (group_reduce.cc says where).
  bool one_handshake(size_t bytes) const;
  void reduce_large(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                    const OpContext& context);
  // Rank 0 chooses one of `choice`'s forms for a call of `bytes` and tells the other
  // ranks, in a step of its own; every rank returns it.
  int agree_on_form(TimedChoice& choice, size_t bytes, const OpContext& context);
  void reduce_whole(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                    const OpContext& context);
  void reduce_to_root(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                      const OpContext& context);
  void reduce_whole_chunks(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                           const OpContext& context);
  void reduce_pipelined(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                        const OpContext& context);

  // Shared memory for the user (group_memory.cc). Where a buffer lies, as a rank tells
  // its peers in a step's note: the region (0: none of them) and the offset in the
  // rank's part of it.
  struct Place {
    uint64_t region = 0;
    uint64_t offset = 0;
  };
  // What a rank tells before an in-place collective: where its source lies, and where
  // its result does when peers write into it (all_reduce, reduce's root).
  struct Places {
    Place source;
    Place result;
  };
  static_assert(sizeof(Places) <= Layout::kNoteBytes, "the places ride in a step's note");
  // What allocate_shared made: rank r's part of `bytes` at base + r * stride. Ids count
  // the allocations, which are collective, so every rank gives a region the same id.
  struct SharedRegion {
    uint64_t id;
    Segment segment;
    size_t stride;
    size_t bytes;
    unsigned char* part(int rank) const { return segment.base() + static_cast<size_t>(rank) * stride; }
  };
  // Whether a collective of `bytes` takes a step to tell where its buffers lie: only
  // once the user has allocated shared memory (which every rank knows alike), and only
  // for messages that repay the step.
  bool may_read_in_place(size_t bytes) const;
  Place place_of(const void* buffer, size_t bytes) const;
  // Where rank `owner`'s buffer of `bytes` at `place` is mapped here; fails with
  // kMismatch where this rank does not know the region (the ranks freed it at
  // different points of the collective order) or the region does not hold it.
  unsigned char* mapped_at(int owner, Place place, size_t bytes, const OpContext& context) const;
  void write_places(uint64_t step, Places places) {
    std::memcpy(step_data(rank_, step, sizeof places), &places, sizeof places);
  }
  Places read_places(int rank, uint64_t step) const {
    Places places;
    std::memcpy(&places, step_data(rank, step, sizeof places), sizeof places);
    return places;
  }
  // Whether every rank told, at `step`, that its source lies in shared memory.
  bool sources_shared(uint64_t step) const {
    for (int r = 0; r < size_; ++r) {
      if (read_places(r, step).source.region == 0) return false;
    }
    return true;
  }
  // The symmetric in-place forms' two steps: every rank tells its places and waits for
  // every rank's (the step returned is where to read them); then, after the copies,
  // every rank waits until every rank is done with its buffers, and counts the run.
  uint64_t announce_places(Places places, const OpContext& context);
  void wait_done_in_place(const OpContext& context);
  // The in-place forms (group_copy.cc, group_reduce.cc): false, having copied nothing,
  // when a buffer they need does not lie in shared memory, and the caller goes on
  // through the slots.
  bool read_root_in_place(const unsigned char* root_data, size_t root_bytes, unsigned char* out, size_t offset,
                          size_t bytes, int root, const OpContext& context);
  bool all_gather_in_place(const unsigned char* in, unsigned char* out, size_t bytes_per_rank,
                           const OpContext& context);
  bool gather_in_place(const unsigned char* in, unsigned char* out, size_t bytes_per_rank, int root,
                       const OpContext& context);
  bool all_to_all_in_place(const unsigned char* in, unsigned char* out, size_t bytes_per_rank,
                           const OpContext& context);
  bool reduce_in_place(const unsigned char* in, unsigned char* out, size_t count, Dtype dtype, ReduceOp op, int root,
                       const OpContext& context);
  bool reduce_scatter_in_place(const unsigned char* in, unsigned char* out, size_t count_per_rank, Dtype dtype,
                               ReduceOp op, const OpContext& context);

  // Reading peers' private buffers from their processes (group_peer_reads.cc). A rank
  // tells where its block lies in a step's note; which form it takes (rank 0 the one it
  // chose, in TimedChoice's numbers; the others kFromPeers, or kThroughSlots where
  // their block must not be read); how long it took in the last call that chose; and,
  // in the first, its share of the CPUs (cpu_share.h: machine is this one).
  enum PeerReadForm : int8_t { kThroughSlots = 0, kFromPeers = 1 };
  struct PeerBlock {
    uint64_t address = 0;
    int64_t last_ns = -1;
    uint64_t cpu_bits = 0;
    int32_t pid = 0;
    uint16_t cpus = 0;
    CpuClaim claim = CpuClaim::kAuto;
    PeerReadForm form = kThroughSlots;
  };
  static_assert(sizeof(PeerBlock) <= Layout::kNoteBytes, "a block's place rides in a step's note");
  // Rank 0's choice for one collective, timed by its slowest rank: through the slots a
  // rank returns once its own copies are done, not waiting for the others', so rank
  // 0's own time could leave a slower peer's out. Each rank's time of a call (from the
  // announcement to its return) rides in its next announcement, and rank 0 records the
  // longest then.
  struct PeerReadChoice {
    // Where ranks share CPUs, the block a rank from which the collective may read
    // peers (SIZE_MAX: never): there the step that announces the blocks costs a
    // context switch or two, which small blocks do not repay (group_peer_reads.cc).
    const size_t sharing_cpus_from_bytes;
    TimedChoice choice{2};
    int64_t last_ns = -1;  // this rank's time of the last call that chose; -1 before the first
    size_t last_bytes = 0;
    int last_form = kThroughSlots;
  };
  // Whether a data mover of `bytes` a rank chooses between the slots and its peers'
  // memory: not once a rank could not read a peer's (all_read), nor below the choice's
  // sharing_cpus_from_bytes once the first such call found ranks sharing CPUs.
  bool may_read_peers(const PeerReadChoice& choice, size_t bytes) const;
  // The step where every rank tells where `block` lies and rank 0 the form it chose for
  // `bytes` (and records the last call's time); returns the step, where peer_block
  // reads them. The first call's also settles, alike on every rank, whether the ranks
  // may each have a CPU.
  uint64_t announce_block(const void* block, bool readable, PeerReadChoice& choice, size_t bytes,
                          const OpContext& context);
  PeerBlock peer_block(int rank, uint64_t step) const;
  // Copies `bytes` at `offset` of a peer's block into `to`; false where the kernel refused.
  bool read_peer(const PeerBlock& from, size_t offset, void* to, size_t bytes) const;
  // The step that ends a call that read peers: every rank tells whether it read all it
  // needed, and waits until every rank is done with its block. False, on every rank
  // alike, when one could not: the call then runs through the slots, and so do all
  // later ones.
  bool all_read(bool read, const OpContext& context);
  // Runs a call of `bytes` (a rank's) whose own block is `block` (nullptr where no one
  // reads it) in the form rank 0 chose, or through the slots where a rank's block is
  // in place (readable false): from_peers(step) (false: it fell back) or slots().
  template <typename FromPeers, typename Slots>
  void from_peers_or_slots(PeerReadChoice& choice, const void* block, bool readable, size_t bytes,
                           const OpContext& context, FromPeers&& from_peers, Slots&& slots) {
    const uint64_t step = announce_block(block, readable, choice, bytes, context);
    int form = may_read_peers(choice, bytes) ? kFromPeers : kThroughSlots;
    for (int r = 0; r < size_; ++r) form = std::min<int>(form, peer_block(r, step).form);
    const auto started = std::chrono::steady_clock::now();
    if (form != kFromPeers || !from_peers(step)) slots();
    choice.last_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
    choice.last_bytes = bytes;
    choice.last_form = form;
  }
  bool all_gather_from_peers(const unsigned char* in, unsigned char* out, size_t bytes_per_rank, uint64_t step,
                             const OpContext& context);
  bool all_to_all_from_peers(const unsigned char* in, unsigned char* out, size_t bytes_per_rank, uint64_t step,
                             const OpContext& context);
  bool read_from_root(unsigned char* out, size_t offset, size_t bytes, int root, uint64_t step,
                      const OpContext& context);

  Segment segment_;
  Layout layout_;
  int rank_;
  int size_;
  WaitPolicy policy_;
  bool fenced_;                        // whether this rank fences its posts (signal.h)
  uint64_t shape_ = 0;                 // the running collective's Shape, folded with the ones before (run())
  uint32_t posted_shape_ = 0;          // shape_ folded to the 32 bits a step entry carries
  const char* hashed_name_ = nullptr;  // the collective name whose hash name_hash_ holds (run())
  uint64_t name_hash_ = 0;
  uint64_t step_ = 0;                          // the last step posted
  uint64_t slot_uses_ = 0;                     // slot fills so far; the next fill uses parity slot_uses_ % 2
  uint64_t result_uses_ = 0;                   // the same for the result areas
  uint64_t known_ = 0;                         // every other rank is known to have posted at least this step
  uint64_t entry_release_[kStepEntries] = {};  // per step entry of this rank (post())
  uint64_t slot_release_[2] = {0, 0};          // per parity of the slot uses, for every rank's slots
  std::string failed_;                         // the label of the collective that failed; empty while usable
  std::vector<const void*> sources_;           // reduce_many's sources, one per rank, kept to avoid allocation
  std::vector<void*> targets_;                 // where the in-place forms write, at most one per rank, the same
  TimedChoice large_all_reduces_{2};           // rank 0's times of reduce_large's forms (group_reduce.cc)
  TimedChoice large_reduces_{2};
  // all_gather, all_to_all, scatter and broadcast through the slots or from peers, by
  // size; the bounds where ranks share CPUs, measured at 4 ranks on this project's 2
  // cores, are in group_peer_reads.cc (broadcast's, and its band, in group_copy.cc).
  PeerReadChoice all_gathers_{SIZE_MAX};
  PeerReadChoice all_to_alls_{size_t{64} << 10};
  PeerReadChoice scatters_{size_t{128} << 10};
  PeerReadChoice broadcasts_{SIZE_MAX};
  bool peer_reads_off_ = false;    // a rank could not read a peer's memory (all_read)
  bool cpus_told_ = false;         // whether a call has announced the ranks' CPUs (announce_block)
  bool ranks_share_cpus_ = false;  // what it found
  uint64_t peer_read_runs_ = 0;
  uint64_t regions_changes_ = 0;     // allocations and frees so far, folded into every shape
  std::list<SharedRegion> regions_;  // allocate_shared's, live ones (a list: Segment does not move-assign)
  uint64_t regions_made_ = 0;
  uint64_t in_place_runs_ = 0;
};

template <typename Body>
void SegmentGroup::run(const OpContext& context, const Shape& shape, Body&& body) {
  if (!failed_.empty()) fail_unusable(context);
  // The shape of the collective before (the group starts from FNV's offset basis),
  // mixed with an FNV-1a hash of this one's name, then with its arguments. Names are
  // string literals (kind_name), so the last name's hash is kept by its address: one
  // collective after another of the same kind hashes nothing.
  constexpr uint64_t kFnvBasis = 1469598103934665603ull, kFnvPrime = 1099511628211ull;
  if (context.name != hashed_name_) {
    hashed_name_ = context.name;
    name_hash_ = kFnvBasis;
    for (const char* c = context.name; *c; ++c) name_hash_ = (name_hash_ ^ static_cast<unsigned char>(*c)) * kFnvPrime;
  }
  uint64_t folded = ((shape_ == 0 ? kFnvBasis : shape_) ^ name_hash_) * kFnvPrime;
  folded ^= shape.amount * 0x9E3779B97F4A7C15ull;
  folded ^= (static_cast<uint64_t>(shape.dtype & 0xff) << 48) | (static_cast<uint64_t>(shape.op & 0xff) << 40) |
            static_cast<uint64_t>(static_cast<uint32_t>(shape.root));
  // Which shared regions are live, which decides whether collectives ask where their
  // buffers lie: ranks that disagree would read each other's steps wrongly.
  folded ^= regions_changes_ * 0xC2B2AE3D27D4EB4Full;
  shape_ = folded;
  posted_shape_ = static_cast<uint32_t>(folded ^ (folded >> 32));
  try {
    body();
  } catch (const Error& e) {
    failed_ = context.label();
    // This rank posts no step again: peers waiting for it would otherwise time out.
    if (e.status() == Status::kMismatch) announce_mismatch(control(rank_));
    throw;
  } catch (...) {
    failed_ = context.label();
    throw;
  }
}

template <typename Write, typename Read>
void SegmentGroup::steps(size_t chunks, const OpContext& context, Write&& write, Read&& read) {
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    uint64_t use = slot_uses_++;
    uint64_t step = ++step_;
    claim_slot(use, context);
    write(chunk, use);
    post(step, step + 1, context);
    release_slot(use, step);
    wait_all(step, context, chunk, chunks);
    read(chunk, use);
  }
}

template <typename Write, typename Read>
void SegmentGroup::steps_from_root(size_t chunks, int root, const OpContext& context, Write&& write, Read&& read) {
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const uint64_t use = slot_uses_++;
    const uint64_t step = ++step_;
    if (rank_ == root) {
      claim_slot(use, context);
      write(chunk, use);
      post(step, step + 1, context);
    } else {
      post(step, 0, context);
      wait_owner(root, step, context, chunk, chunks);
      read(chunk, use);
    }
    release_slot(use, step);
  }
}

template <typename Write, typename Read>
void SegmentGroup::steps_to_root(size_t chunks, int root, const OpContext& context, Write&& write, Read&& read) {
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const uint64_t use = slot_uses_++;
    const uint64_t step = ++step_;
    if (rank_ != root) {
      claim_slot(use, context);
      write(chunk, use);
      post(step, step + 1, context);
    } else {
      post(step, 0, context);
      for (int r = 0; r < size_; ++r) {
        if (r != rank_) wait_owner(r, step, context, chunk, chunks);
      }
      read(chunk, use);
    }
    release_slot(use, step);
  }
}

}  // namespace tutti::transport::shm
