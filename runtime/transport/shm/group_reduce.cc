// The reductions of SegmentGroup: all_reduce, reduce and reduce_scatter.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/operation/reduce_op.h"
#include "runtime/transport/shm/segment_group.h"
#include "runtime/transport/shm/stream_copy.h"

namespace tutti::transport::shm {
namespace {

// all_reduce and reduce take one handshake (reduce_whole) while size^2 * bytes stays
// within this, and the chunked pipeline above it. In the one-handshake form every rank
// reads every rank's vector, so the ranks together read size^2 * bytes; the pipeline
// reads about 2 * size * bytes but takes two handshakes per chunk. Measured with
// float32 SUM on this project's 2-core VM: at 2 ranks one handshake was as fast or
// faster up to 1 MiB (15% at 512 KiB); at 4 ranks sharing the 2 cores the two were
// even from 64 to 512 KiB; at 8 ranks the pipeline was ahead from 32 KiB on, and twice
// as fast at 128 KiB. 2 MiB gives 512 KiB at 2 ranks, 128 KiB at 4, 32 KiB at 8, and
// 512 bytes at 64.
constexpr size_t kWholeBudget = size_t{2} << 20;

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// all_reduce and reduce stream their results from this many bytes on
// (reduce_pipelined), and the others' slices of them into recv from the second.
constexpr size_t kStreamResultsFromBytes = size_t{4} << 20;
constexpr size_t kStreamCopiesOutFromBytes = size_t{8} << 20;

// The chunk of reduce_whole_chunks: its input stays in L2 between the copy into the
// slot and the reduction. 2 ranks, 16 MiB, close: 64 KiB 1513-1673 us, 128 KiB
// 1434-1580, 256 KiB 1418-1425, 512 KiB 1367-1479, 1 MiB (a slot) 1712-2083.
constexpr size_t kWholeChunkBytes = size_t{256} << 10;
// reduce_whole_chunks serves 2 ranks up to this many bytes; beyond, rank 0 chooses it
// or the pipeline by their times (reduce_large).
constexpr size_t kWholeChunksUpToBytes = size_t{4} << 20;
// The forms reduce_large chooses between, in TimedChoice's numbers: the pipeline
// first, which lost less where it lost (see reduce_whole_chunks). A reduce takes
// reduce_to_root for the second.
enum LargeForm : int { kPipeline = 0, kWholeChunks = 1 };

// reduce (to one root) past a cell takes reduce_to_root up to this many ranks and
// bytes, in chunks of kToRootChunkBytes (at most a slot). Against the symmetric forms
// it replaced (reduce_whole to 512 KiB, reduce_whole_chunks to 4 MiB at 2 ranks, the
// pipeline at 4 ranks from 128 KiB): tutti-bench reduce -B 5, medians of three or four
// rounds alternating the two builds and Open MPI (--mca btl self,vader), far state
// (342-370 ns), us before -> now (Open MPI):
//   - 2 ranks: 16 KiB 2.94 -> 2.64 (2.81), 64 KiB 10.9 -> 8.4 (6.7), 256 KiB 32.9 ->
//     20.2 (19.9), 1 MiB 183 -> 103 (153), 4 MiB 743 -> 567 (866); chunks of 128 and
//     512 KiB were within 10% of 256 KiB, of 64 KiB worse from 128 KiB;
//   - 4 ranks on the 2 cores, where runs differ by tens of percent: one run 16 KiB
//     10.4 -> 8.6, 256 KiB 89.5 -> 70.9, 1 MiB 413 -> 322, another 8.4 -> 10.7, 85.8
//     -> 100, 417 -> 450 (Open MPI 13.5-18.3, 94-105, 686-731); at 16 and 64 MiB the
//     pipeline was 2-22% ahead, and at 8 ranks from 1 MiB 20-30%.
// At 2 ranks past 4 MiB it is the second form of reduce_large's timed choice (16 MiB:
// 3318 -> 2421, Open MPI 3788).
constexpr int kToRootUpToRanks = 4;
constexpr size_t kToRootUpToBytes = size_t{4} << 20;
constexpr size_t kToRootChunkBytes = size_t{256} << 10;

// Chunk c of `count` elements cut into chunks of `per`: its first element and its count.
std::pair<size_t, size_t> chunk_of(size_t c, size_t per, size_t count) {
  return {c * per, std::min(per, count - c * per)};
}

// Rank `rank`'s slice [lo, hi) of `count` elements split over `size` ranks: whole cache
// lines (of the vector's start), so that no two ranks write into one line of a result
// that starts on a line.
std::pair<size_t, size_t> slice_of(size_t count, size_t unit, int rank, int size) {
  const size_t line_count = kCacheLine / unit;
  const size_t per = ceil_div(ceil_div(count, static_cast<size_t>(size)), line_count) * line_count;
  const size_t lo = std::min(rank * per, count);
  return {lo, std::min(lo + per, count)};
}

}  // namespace

bool SegmentGroup::one_handshake(size_t bytes) const {
  const size_t ranks = static_cast<size_t>(size_);
  return bytes <= layout_.slot_bytes && bytes * ranks * ranks <= kWholeBudget;
}

void SegmentGroup::all_reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                              const OpContext& context) {
  run(context, Shape{count, static_cast<int>(dtype), static_cast<int>(op)}, [&] {
    if (count == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (may_read_in_place(count * dtype_size(dtype)) && reduce_in_place(in, out, count, dtype, op, -1, context)) {
      return;
    }
    if (one_handshake(count * dtype_size(dtype))) {
      reduce_whole(send, recv, count, dtype, op, -1, context);
    } else {
      reduce_large(send, recv, count, dtype, op, -1, context);
    }
  });
}

void SegmentGroup::reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                          const OpContext& context) {
  run(context, Shape{count, static_cast<int>(dtype), static_cast<int>(op), root}, [&] {
    if (count == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (may_read_in_place(count * dtype_size(dtype)) && reduce_in_place(in, out, count, dtype, op, root, context)) {
      return;
    }
    if (count * dtype_size(dtype) <= layout_.cell_bytes) {
      // One-sided, as a gather (step_to_root): back-to-back reduces overlap, as Open
      // MPI's eager ones do, where a symmetric step made every rank wait for every other:
      // 4 ranks on this project's 2 cores, 8 bytes, 2.84-2.88 us a call, now 0.11-0.16
      // (Open MPI 0.23-0.64).
      const bool is_root = step_to_root(send, count * dtype_size(dtype), root, context,
                                        [&](int r, const unsigned char* data) { sources_[r] = data; });
      if (is_root) reduce_many(recv, sources_.data(), size_, count, dtype, op, size_);
    } else if (size_ <= kToRootUpToRanks && count * dtype_size(dtype) <= kToRootUpToBytes) {
      reduce_to_root(send, recv, count, dtype, op, root, context);
    } else if (one_handshake(count * dtype_size(dtype))) {
      reduce_whole(send, recv, count, dtype, op, root, context);
    } else {
      reduce_large(send, recv, count, dtype, op, root, context);
    }
  });
}

// One-sided, chunk by chunk through the slots: a rank other than root copies a chunk
// into its slot, posts and goes on to the next chunk (and the next call) without
// waiting; root waits for each rank's chunk and reduces it, its own straight from
// `send`, into recv. A rank's copy of chunk c + 1 overlaps root's reduction of chunk c
// (the slots are double-buffered), and back-to-back calls overlap as step_to_root's do.
// Root posts each chunk's step before it waits, and every other rank may rewrite its
// slot of chunk c only once root has posted the step of chunk c + 1, which it does
// after reducing chunk c (the reuse rule of segment_group.h).
void SegmentGroup::reduce_to_root(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                                  const OpContext& context) {
  const size_t unit = dtype_size(dtype);
  const size_t chunk_count = std::min(kToRootChunkBytes, layout_.slot_bytes) / unit;
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  steps_to_root(
      ceil_div(count, chunk_count), root, context,
      [&](size_t c, uint64_t use) {
        auto [offset, n] = chunk_of(c, chunk_count, count);
        std::memcpy(slot(rank_, use), in + offset * unit, n * unit);
      },
      [&](size_t c, uint64_t use) {
        auto [offset, n] = chunk_of(c, chunk_count, count);
        for (int r = 0; r < size_; ++r) sources_[r] = r == rank_ ? in + offset * unit : slot(r, use);
        reduce_many(out + offset * unit, sources_.data(), size_, n, dtype, op, size_);
      });
}

// One step: each rank puts its vector where the others can read it (in its step entry
// when it fits there, so that a peer fetches step and data in one cache line), waits
// for all, and reduces everything itself, its own part straight from `send`. Entry and
// slot are claimed before they are written (the reuse rule of segment_group.h).
void SegmentGroup::reduce_whole(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                                const OpContext& context) {
  const size_t bytes = count * dtype_size(dtype);
  const uint64_t step = ++step_;
  const bool in_entry = bytes <= kInlineBytes;
  const uint64_t use = in_entry ? 0 : slot_uses_++;
  auto shared = [&](int r) -> unsigned char* { return in_entry ? entry(r, step).payload : slot(r, use); };

  if (in_entry) {
    claim_entry(step, context);
  } else {
    claim_slot(use, context);
  }
  std::memcpy(shared(rank_), send, bytes);
  post(step, step + 1, context);
  if (!in_entry) release_slot(use, step);
  wait_all(step, context, 0, 1);
  if (root >= 0 && root != rank_) return;
  for (int r = 0; r < size_; ++r) sources_[r] = r == rank_ ? send : shared(r);
  reduce_many(recv, sources_.data(), size_, count, dtype, op, size_);
}

// Past one handshake: from 3 ranks on the pipeline; at 2, chunk by chunk up to
// kWholeChunksUpToBytes, and beyond, whichever of the two rank 0's recent calls of the
// size found faster (timed_choice.h), which costs a step to agree on.
void SegmentGroup::reduce_large(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                                const OpContext& context) {
  const size_t bytes = count * dtype_size(dtype);
  if (size_ > 2) return reduce_pipelined(send, recv, count, dtype, op, root, context);
  if (bytes <= kWholeChunksUpToBytes) return reduce_whole_chunks(send, recv, count, dtype, op, root, context);
  TimedChoice& choice = root < 0 ? large_all_reduces_ : large_reduces_;
  const int form = agree_on_form(choice, bytes, context);
  const auto started = std::chrono::steady_clock::now();
  if (form == kWholeChunks && root >= 0) {
    reduce_to_root(send, recv, count, dtype, op, root, context);
  } else if (form == kWholeChunks) {
    reduce_whole_chunks(send, recv, count, dtype, op, root, context);
  } else {
    reduce_pipelined(send, recv, count, dtype, op, root, context);
  }
  if (rank_ == 0) {
    choice.record(
        bytes, form,
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  }
}

int SegmentGroup::agree_on_form(TimedChoice& choice, size_t bytes, const OpContext& context) {
  const uint64_t step = ++step_;
  claim_entry(step, context);
  unsigned char* form = step_data(0, step, 1);
  if (rank_ == 0) *form = static_cast<unsigned char>(choice.choose(bytes));
  post(step, step + 1, context);
  wait_all(step, context, 0, 1);
  return *form;
}

// At 2 ranks, chunk by chunk, one step each: every rank copies its chunk into its slot
// and reduces the whole chunk from both slots (its own from `send`) straight into recv.
// Against the pipeline, a rank reads its peer's whole chunk rather than half of it,
// but its own chunk is still in L2 when it reduces, nothing goes through a result area
// and out again, and a chunk takes one handshake, not two. 2 ranks, plain buffers, us:
//   - close (core round trip 111-126 ns): 1 MiB 48-52 against 53-54, 4 MiB 201-205
//     against 316-325, 16 MiB 1367-1520 against 1678-1681, 64 MiB 7056-7391 against
//     7610-7713;
//   - far (585 ns), where the cores do not share a cache and reading the peer's
//     chunk costs more: 1 MiB 78-88 against 128-151, 4 MiB 318-352 against 328-377,
//     but 16 MiB 2024-2180 against 1561-1624 and 64 MiB 8669-9869 against 7070-7748.
// So it serves 2 ranks up to kWholeChunksUpToBytes, and beyond where rank 0 finds it
// faster (reduce_large). From 3 ranks on the extra reads
// cost more than that saves at every size measured (3 ranks, 16 MiB: 5976 against
// 3476; 4 ranks 6475-8754 against 3808-3985).
void SegmentGroup::reduce_whole_chunks(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                                       const OpContext& context) {
  const size_t unit = dtype_size(dtype);
  const size_t chunk_count = std::min(kWholeChunkBytes, layout_.slot_bytes) / unit;
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);
  steps(
      ceil_div(count, chunk_count), context,
      [&](size_t c, uint64_t use) {
        auto [offset, n] = chunk_of(c, chunk_count, count);
        std::memcpy(slot(rank_, use), in + offset * unit, n * unit);
      },
      [&](size_t c, uint64_t use) {
        if (root >= 0 && root != rank_) return;
        auto [offset, n] = chunk_of(c, chunk_count, count);
        for (int r = 0; r < size_; ++r) sources_[r] = r == rank_ ? in + offset * unit : slot(r, use);
        reduce_many(out + offset * unit, sources_.data(), size_, n, dtype, op, size_);
      });
}

// Chunk by chunk, through two steps each: "arrived" (every rank has put the chunk of its
// input in its slot), then "reduced" (every rank has reduced its 1/size slice of the
// chunk across all slots into the result area). Every rank then copies the whole
// reduced chunk out. A rank reads its own slice from `send`, so it copies only the
// others' slices in.
//
// From kStreamResultsFromBytes on, a rank writes its reduced slice with streaming
// stores, into the result area and straight into recv, and copies only the others'
// slices out. The peers read the result area, so its lines sit in their caches, and a
// plain store to such a line first fetches it and invalidates their copies, a line at
// a time; a streaming store does neither, but sends the line to memory, where the
// peers must fetch it from. Which costs more depends on how far apart the cores are,
// and this project's VM moves its two vCPUs. Measured at 2 ranks, float32 SUM, with
// them far apart (a cross-core round trip of 400-600 ns): at 16 MiB the reduction took
// 1250 us per call with plain stores and 660 with streaming ones, and the all_reduce
// 2250-2450 us against 1310-1370; at 1 MiB 130 us against 73. Close (90 ns): 16 MiB
// 2140 us against 1940, 1 MiB 93 against 105. In between (150 ns): 16 MiB 1480-1810
// against 1720, 4 MiB 480-720 against 375, but 1 MiB 58-63 against 85-93.
//
// From kStreamCopiesOutFromBytes on, the copies of the others' slices into recv stream
// too: recv then no longer fits in the cache with everything else, and a plain store
// first reads each of its lines (2 ranks, close, one reduction line by line: 8 MiB
// 625-675 us against 703-724, 16 MiB 1363-1484 against 1868-1890; 4 MiB 322-361
// against 313-317).
//
// The pipeline: after posting "reduced" for chunk c, a rank copies chunk c + 1 in and
// posts its "arrived" before waiting for the others' "reduced" of c. Why the double
// buffers suffice:
//   - Slot use c + 1 is written after the wait for everyone's "arrived" of c, which each
//     rank posts after its "reduced" of c - 1, and use c - 1 (same buffer) is read only
//     by the reductions of chunk c - 1, which precede those posts.
//   - Result use c is written after the wait for everyone's "arrived" of c, which each
//     rank posts after copying out chunk c - 2 (same buffer).
//   - Result use c is read after everyone's "reduced" of c, and not written again
//     before everyone's "arrived" of c + 2, which each rank posts after that read.
//   - A rank posts "arrived" of c + 1 two steps past its last wait, which the reuse rule
//     of segment_group.h allows at once with at least three step entries.
//   - The first slot and step entry belong to earlier collectives, and are claimed.
// The collective ends with the wait for "reduced" of the last chunk.
static_assert(kStepEntries >= 3, "reduce_pipelined posts two steps past its last wait");

void SegmentGroup::reduce_pipelined(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                                    const OpContext& context) {
  const size_t unit = dtype_size(dtype);
  const size_t chunk_count = layout_.slot_bytes / unit;
  const size_t chunks = ceil_div(count, chunk_count);
  const uint64_t first_step = step_ + 1;
  const uint64_t first_slot = slot_uses_;
  const uint64_t first_result = result_uses_;
  step_ += 2 * chunks;
  slot_uses_ += chunks;
  result_uses_ += chunks;

  const bool receives = root < 0 || root == rank_;
  const bool streams = count * unit >= kStreamResultsFromBytes;
  const auto* in = static_cast<const unsigned char*>(send);
  auto* out = static_cast<unsigned char*>(recv);

  auto copy_in = [&](size_t c) {
    auto [offset, n] = chunk_of(c, chunk_count, count);
    auto [lo, hi] = slice_of(n, unit, rank_, size_);
    claim_slot(first_slot + c, context);
    release_slot(first_slot + c, first_step + 2 * c);
    unsigned char* mine = slot(rank_, first_slot + c);
    std::memcpy(mine, in + offset * unit, lo * unit);
    std::memcpy(mine + hi * unit, in + (offset + hi) * unit, (n - hi) * unit);
  };

  copy_in(0);
  post(first_step, first_step + 1, context);
  for (size_t c = 0; c < chunks; ++c) {
    auto [offset, n] = chunk_of(c, chunk_count, count);
    auto [lo, hi] = slice_of(n, unit, rank_, size_);
    const uint64_t arrived = first_step + 2 * c;
    unsigned char* reduced = result(first_result + c);

    wait_all(arrived, context, c, chunks);
    for (int r = 0; r < size_; ++r) {
      sources_[r] = r == rank_ ? in + (offset + lo) * unit : slot(r, first_slot + c) + lo * unit;
    }
    void* targets[] = {reduced + lo * unit, receives ? out + (offset + lo) * unit : nullptr};
    reduce_many_to(targets, receives && streams ? 2 : 1, sources_.data(), size_, hi - lo, dtype, op, size_,
                   streams ? Stores::kStreaming : Stores::kPlain);
    post(arrived + 1, arrived + 2, context);
    if (c + 1 < chunks) {
      copy_in(c + 1);
      post(arrived + 2, arrived + 3, context);
    }
    wait_all(arrived + 1, context, c, chunks);
    if (receives && streams) {
      if (count * unit >= kStreamCopiesOutFromBytes) {
        stream_unfenced(out + offset * unit, reduced, lo * unit);
        copy_streaming(out + (offset + hi) * unit, reduced + hi * unit, (n - hi) * unit);
      } else {
        std::memcpy(out + offset * unit, reduced, lo * unit);
        std::memcpy(out + (offset + hi) * unit, reduced + hi * unit, (n - hi) * unit);
      }
    } else if (receives) {
      copy_out(out + offset * unit, reduced, n * unit, count * unit);
    }
  }
}

// Every rank tells where its vector and (where it receives) its result lie. When all of
// them lie in shared memory, each rank reduces its slice of the vector from every
// rank's vector straight into every result, and waits until every rank is done with
// its vector and its result: one pass over the data, where the slots take three (copy
// in, reduce, copy out). In place (send == recv), rank r's stores into slice r of a
// vector follow its own reads of that block of it, and no other rank reads slice r.
bool SegmentGroup::reduce_in_place(const unsigned char* in, unsigned char* out, size_t count, Dtype dtype, ReduceOp op,
                                   int root, const OpContext& context) {
  const size_t unit = dtype_size(dtype);
  const size_t bytes = count * unit;
  auto receives = [&](int r) { return root < 0 || root == r; };
  const uint64_t step =
      announce_places(Places{place_of(in, bytes), receives(rank_) ? place_of(out, bytes) : Place{}}, context);
  if (!sources_shared(step)) return false;
  for (int r = 0; r < size_; ++r) {
    if (receives(r) && read_places(r, step).result.region == 0) return false;
  }
  auto [lo, hi] = slice_of(count, unit, rank_, size_);
  targets_.clear();
  for (int r = 0; r < size_; ++r) {
    const Places places = read_places(r, step);
    sources_[r] = mapped_at(r, places.source, bytes, context) + lo * unit;
    if (receives(r)) targets_.push_back(mapped_at(r, places.result, bytes, context) + lo * unit);
  }
  reduce_many_to(targets_.data(), static_cast<int>(targets_.size()), sources_.data(), size_, hi - lo, dtype, op, size_,
                 bytes >= kStreamInPlaceFromBytes ? Stores::kStreaming : Stores::kPlain);
  wait_done_in_place(context);
  return true;
}

// Every rank tells where its vector lies. When all lie in shared memory, each rank
// reduces its own block straight from every rank's vector into recv, and waits until
// every rank is done with its vector. In place (recv == send + rank * count), a rank's
// recv is the one block of its vector that no other rank reads.
bool SegmentGroup::reduce_scatter_in_place(const unsigned char* in, unsigned char* out, size_t count_per_rank,
                                           Dtype dtype, ReduceOp op, const OpContext& context) {
  const size_t block = count_per_rank * dtype_size(dtype);
  const size_t bytes = block * size_;
  const uint64_t step = announce_places(Places{place_of(in, bytes), {}}, context);
  if (!sources_shared(step)) return false;
  for (int r = 0; r < size_; ++r) {
    sources_[r] = mapped_at(r, read_places(r, step).source, bytes, context) + rank_ * block;
  }
  // Plain stores: streaming ones were slower at every size measured (2 ranks, 16 MiB
  // of vectors: 479-779 us against 395-422).
  reduce_many(out, sources_.data(), size_, count_per_rank, dtype, op, size_);
  wait_done_in_place(context);
  return true;
}

// Chunk by chunk, one step each: every rank puts, for every other rank r, its chunk of
// block r in part r of its slot; then reduces its own block's chunk across all ranks'
// parts straight into recv (its own part from `send`, which in place is recv itself,
// element for element). The parts split a whole slot: at 2 and 4 ranks, 16 MiB per
// rank ran 5-20% faster than with parts of a 256 KiB chunk. Where a slot has no cache
// line for every rank, each chunk takes a round of steps, each serving the ranks a
// slot has parts for (parts_of_slot).
void SegmentGroup::reduce_scatter(const void* send, void* recv, size_t count_per_rank, Dtype dtype, ReduceOp op,
                                  const OpContext& context) {
  run(context, Shape{count_per_rank, static_cast<int>(dtype), static_cast<int>(op)}, [&] {
    if (count_per_rank == 0) return;
    const size_t unit = dtype_size(dtype);
    const SlotParts parts = parts_of_slot();
    const size_t part_count = parts.part_bytes / unit;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (may_read_in_place(count_per_rank * unit * size_) &&
        reduce_scatter_in_place(in, out, count_per_rank, dtype, op, context)) {
      return;
    }
    auto span = [&](size_t s) {
      const size_t c = s / static_cast<size_t>(parts.rounds);
      return std::pair{c * part_count, std::min(part_count, count_per_rank - c * part_count)};
    };
    auto round = [&](size_t s) { return static_cast<int>(s % static_cast<size_t>(parts.rounds)); };
    steps(
        ceil_div(count_per_rank, part_count) * static_cast<size_t>(parts.rounds), context,
        [&](size_t s, uint64_t use) {
          auto [offset, n] = span(s);
          unsigned char* mine = slot(rank_, use);
          const int first = parts.first(round(s));
          for (int r = first; r < std::min(size_, first + parts.ranks_per_step); ++r) {
            if (r != rank_) {
              std::memcpy(mine + (r - first) * parts.part_bytes, in + (r * count_per_rank + offset) * unit, n * unit);
            }
          }
        },
        [&](size_t s, uint64_t use) {
          if (parts.round_of(rank_) != round(s)) return;  // the ranks of another round
          auto [offset, n] = span(s);
          const size_t mine = static_cast<size_t>(rank_ - parts.first(round(s))) * parts.part_bytes;
          for (int r = 0; r < size_; ++r) {
            sources_[r] = r == rank_ ? in + (rank_ * count_per_rank + offset) * unit : slot(r, use) + mine;
          }
          reduce_many(out + offset * unit, sources_.data(), size_, n, dtype, op, size_);
        });
  });
}

}  // namespace tutti::transport::shm
