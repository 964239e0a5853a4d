// The collectives of SegmentGroup that only move data: broadcast, all_gather, gather,
// scatter and all_to_all, each a run of simple steps (segment_group.h). A rank's own
// block never goes through shared memory, and is not copied at all in place.
#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/transport/shm/segment_group.h"
#include "runtime/transport/shm/stream_copy.h"

namespace tutti::transport::shm {
namespace {

// The chunk of one step of broadcast, all_gather, gather and scatter (at most a slot).
// Smaller than the reductions' chunks because these collectives serialise within a
// step (broadcast: root copies in, then the others copy out), so finer steps pipeline
// better. Measured on this project's 2-core VM, at 2 ranks 128-256 KiB beat 1 MiB
// four times over for a 1 MiB broadcast and twice for a 16 MiB all_gather, and 64 KiB
// or less lost 10-30%; at 4 ranks sharing the 2 cores, 256 KiB was best throughout.
constexpr size_t kCopyChunkBytes = size_t{256} << 10;

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// Chunk c of a block of `bytes`, in chunks of `chunk`: its offset and length.
std::pair<size_t, size_t> chunk_span(size_t c, size_t chunk, size_t bytes) {
  return {c * chunk, std::min(chunk, bytes - c * chunk)};
}

// A piece of a receive buffer of buffer_bytes, unless it is already in place.
void copy_unless_same(unsigned char* dst, const unsigned char* src, size_t bytes, size_t buffer_bytes) {
  if (dst != src) copy_out(dst, src, bytes, buffer_bytes);
}

}  // namespace

size_t SegmentGroup::copy_chunk() const { return std::min(kCopyChunkBytes, layout_.slot_bytes); }

// Root puts each chunk in its slot; the others copy it out. Double buffering lets root
// fill chunk c + 1 while the others still copy chunk c.
void SegmentGroup::broadcast(void* buffer, size_t bytes, int root, const OpContext& context) {
  run(context, Shape{bytes, -1, -1, root}, [&] {
    if (bytes == 0) return;
    auto* data = static_cast<unsigned char*>(buffer);
    const size_t chunk = copy_chunk();
    steps(
        ceil_div(bytes, chunk), context,
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes);
          if (rank_ == root) std::memcpy(slot(root, use), data + offset, n);
        },
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes);
          if (rank_ != root) copy_out(data + offset, slot(root, use), n, bytes);
        });
  });
}

// Every rank puts the chunk of its block in its slot, and copies every block's chunk out.
void SegmentGroup::all_gather(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) {
  run(context, Shape{bytes_per_rank}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    const size_t chunk = copy_chunk();
    steps(
        ceil_div(bytes_per_rank, chunk), context,
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          std::memcpy(slot(rank_, use), in + offset, n);
        },
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          copy_out_blocks(out, in, offset, n, use, bytes_per_rank);
        });
  });
}

// Chunk (offset, n) of every rank's block into `out`: this rank's own from `in`, the
// others' from their slots; all_gather and gather's root read the same way.
void SegmentGroup::copy_out_blocks(unsigned char* out, const unsigned char* in, size_t offset, size_t n,
                                   uint64_t use, size_t bytes_per_rank) {
  for (int r = 0; r < size_; ++r) {
    const unsigned char* from = r == rank_ ? in + offset : slot(r, use);
    copy_unless_same(out + r * bytes_per_rank + offset, from, n, bytes_per_rank * size_);
  }
}

// The ranks other than root put their chunk in their slot; root copies them out.
void SegmentGroup::gather(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) {
  run(context, Shape{bytes_per_rank, -1, -1, root}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    const size_t chunk = copy_chunk();
    steps(
        ceil_div(bytes_per_rank, chunk), context,
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          if (rank_ != root) std::memcpy(slot(rank_, use), in + offset, n);
        },
        [&](size_t c, uint64_t use) {
          if (rank_ != root) return;
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          copy_out_blocks(out, in, offset, n, use, bytes_per_rank);
        });
  });
}

// Root puts block r's chunk in rank r's slot, which rank r leaves alone during a
// scatter; each rank copies its chunk out of its own slot.
void SegmentGroup::scatter(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) {
  run(context, Shape{bytes_per_rank, -1, -1, root}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    const size_t chunk = copy_chunk();
    steps(
        ceil_div(bytes_per_rank, chunk), context,
        [&](size_t c, uint64_t use) {
          if (rank_ != root) return;
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          for (int r = 0; r < size_; ++r) {
            if (r != root) std::memcpy(slot(r, use), in + r * bytes_per_rank + offset, n);
          }
        },
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          const unsigned char* from = rank_ == root ? in + root * bytes_per_rank + offset : slot(rank_, use);
          copy_unless_same(out + offset, from, n, bytes_per_rank);
        });
  });
}

// Every rank puts its chunk of block r in part r of its slot; rank r collects part r of
// every slot. The parts split a whole slot, as reduce_scatter's do: every rank copies
// in and out at the same time, so larger steps only save handshakes. In place
// (send == recv) this is safe chunk by chunk: the chunk of block r that a rank
// overwrites is the one it has just put in its slot.
void SegmentGroup::all_to_all(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) {
  run(context, Shape{bytes_per_rank}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    const size_t part = layout_.slot_bytes / size_ / kCacheLine * kCacheLine;
    steps(
        ceil_div(bytes_per_rank, part), context,
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, part, bytes_per_rank);
          unsigned char* mine = slot(rank_, use);
          for (int r = 0; r < size_; ++r) {
            if (r != rank_) std::memcpy(mine + r * part, in + r * bytes_per_rank + offset, n);
          }
        },
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, part, bytes_per_rank);
          for (int r = 0; r < size_; ++r) {
            const unsigned char* from =
                r == rank_ ? in + rank_ * bytes_per_rank + offset : slot(r, use) + rank_ * part;
            copy_unless_same(out + r * bytes_per_rank + offset, from, n, bytes_per_rank * size_);
          }
        });
  });
}

}  // namespace tutti::transport::shm
