// The Group of group.h over one shared segment (layout.h), split over three files:
// group.cc (creation, steps, failure), group_reduce.cc (the reductions) and
// group_copy.cc (the collectives that only move data).
//
// Every collective is a sequence of steps, numbered by the group and the same on every
// rank. At each step every rank writes what the step needs into shared memory, posts
// the step, waits for every rank to post it, and reads what the others wrote. Slots
// and result areas are double-buffered by a use count that, like the step count, is
// the same on every rank.
//
// Reuse rule: a rank writes use u + 2 of a slot (or result area) only after it has
// seen every rank post a step that each posts after it finished reading use u. With
// "write, post, wait for all, read" steps this holds by construction: use u + 2 is
// written after the wait of use u + 1's step, which every rank posts after reading
// use u. Every collective also ends with a wait for all ranks at its last step, so
// the rule carries from one collective to the next. all_reduce's pipeline, which
// deviates from the simple step shape, argues its own case in group_reduce.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transport/shm/group.h"
#include "runtime/transport/shm/layout.h"
#include "runtime/transport/shm/segment.h"
#include "runtime/transport/shm/signal.h"

namespace tutti::transport::shm {

class SegmentGroup final : public Group {
 public:
  SegmentGroup(Segment segment, const Layout& layout, int rank, int size);

  size_t mapped_bytes() const override { return segment_.bytes(); }

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

 private:
  Control& control(int rank) const {
    return *reinterpret_cast<Control*>(base() + layout_.controls_offset + rank * Layout::kControlStride);
  }
  unsigned char* slot(int rank, uint64_t use) const {
    return base() + layout_.slots_offset + (2 * static_cast<size_t>(rank) + (use & 1)) * layout_.slot_bytes;
  }
  unsigned char* result(uint64_t use) const {
    return base() + layout_.results_offset + (use & 1) * layout_.slot_bytes;
  }
  unsigned char* base() const { return segment_.base(); }

  void post(uint64_t step) {
    std::atomic_ref<uint64_t>(control(rank_).lines[step & 1].shape).store(shape_, std::memory_order_relaxed);
    shm::post(control(rank_), step, fenced_);
  }
  void wait_all(uint64_t step, const OpContext& context, size_t chunk, size_t chunks);

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

  // `chunks` steps of the simple shape: write(c, use), post, wait for all, read(c, use).
  template <typename Write, typename Read>
  void steps(size_t chunks, const OpContext& context, Write&& write, Read&& read);

  // The reductions' two shapes: one handshake over the whole vector, and the chunked
  // pipeline; one_handshake says which a vector of `bytes` takes. root < 0 means every
  // rank receives the result.
  bool one_handshake(size_t bytes) const;
  void reduce_whole(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                    const OpContext& context);
  void reduce_pipelined(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                        const OpContext& context);

  Segment segment_;
  Layout layout_;
  int rank_;
  int size_;
  WaitPolicy policy_;
  bool fenced_;  // whether this rank fences its posts (signal.h)
  uint64_t shape_ = 0;        // the running collective's Shape, folded (run())
  uint64_t step_ = 0;         // the last step posted
  uint64_t slot_uses_ = 0;    // slot fills so far; the next fill uses parity slot_uses_ % 2
  uint64_t result_uses_ = 0;  // the same for the result areas
  std::string failed_;        // the label of the collective that failed; empty while usable
  std::vector<const void*> sources_;  // reduce_many's sources, one per rank, kept to avoid allocation
};

template <typename Body>
void SegmentGroup::run(const OpContext& context, const Shape& shape, Body&& body) {
  if (!failed_.empty()) fail_unusable(context);
  // FNV-1a over the collective's name, then the arguments mixed in.
  uint64_t folded = 1469598103934665603ull;
  for (const char* c = context.name; *c; ++c) folded = (folded ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  folded ^= shape.amount * 0x9E3779B97F4A7C15ull;
  folded ^= (static_cast<uint64_t>(shape.dtype & 0xff) << 48) | (static_cast<uint64_t>(shape.op & 0xff) << 40) |
            static_cast<uint64_t>(static_cast<uint32_t>(shape.root));
  shape_ = folded;
  try {
    body();
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
    write(chunk, use);
    post(step);
    wait_all(step, context, chunk, chunks);
    read(chunk, use);
  }
}

}  // namespace tutti::transport::shm
