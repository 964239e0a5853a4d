// How the point-to-point algorithms cut a buffer into per-rank blocks and into chunks,
// and the byte and ring-index arithmetic that goes with it, written once so that every
// algorithm splits a count the same way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "runtime/operation/call.h"

namespace tutti::collectives {

// `count` elements cut into `parts` blocks as evenly as possible: the first
// count % parts blocks hold one element more than the others, so when count < parts
// the last blocks are empty (and still exchanged, as empty messages, so that every
// rank sends and receives the same messages whatever the count).
class Blocks {
 public:
  Blocks(size_t count, int parts, size_t element_bytes)
      : base_(count / static_cast<size_t>(parts)),
        extra_(count % static_cast<size_t>(parts)),
        element_bytes_(element_bytes) {}

  size_t elements(int i) const { return base_ + (static_cast<size_t>(i) < extra_ ? 1 : 0); }
  size_t bytes(int i) const { return elements(i) * element_bytes_; }
  // Byte offset of block i; offset(parts) is the whole buffer's size.
  size_t offset(int i) const {
    size_t index = static_cast<size_t>(i);
    return (base_ * index + std::min(index, extra_)) * element_bytes_;
  }
  // Bytes of blocks [first, first + n), which are contiguous.
  size_t span_bytes(int first, int n) const { return offset(first + n) - offset(first); }
  // The largest block (block 0), for sizing scratch.
  size_t max_bytes() const { return bytes(0); }

 private:
  size_t base_;
  size_t extra_;
  size_t element_bytes_;
};

// Where an all_to_all's blocks lie in its buffers, in bytes: every block the same size
// in rank order (all_to_all), or each peer's own count and offset (all_to_allv).
class PeerBlocks {
 public:
  static PeerBlocks uniform(size_t bytes_per_rank) { return PeerBlocks(bytes_per_rank, nullptr, 0); }
  // per_peer's arrays must outlive the PeerBlocks.
  static PeerBlocks per_peer(const PerPeer& per_peer, size_t element_bytes) {
    return PeerBlocks(0, &per_peer, element_bytes);
  }

  size_t send_offset(int peer) const { return pick(peer, per_peer_ ? per_peer_->send_offsets : nullptr); }
  size_t send_bytes(int peer) const { return pick_size(per_peer_ ? per_peer_->send_counts : nullptr, peer); }
  size_t recv_offset(int peer) const { return pick(peer, per_peer_ ? per_peer_->recv_offsets : nullptr); }
  size_t recv_bytes(int peer) const { return pick_size(per_peer_ ? per_peer_->recv_counts : nullptr, peer); }

 private:
  PeerBlocks(size_t uniform, const PerPeer* per_peer, size_t element_bytes)
      : uniform_(uniform), per_peer_(per_peer), element_bytes_(element_bytes) {}
  size_t pick(int peer, const size_t* offsets) const {
    return offsets ? offsets[peer] * element_bytes_ : uniform_ * static_cast<size_t>(peer);
  }
  size_t pick_size(const size_t* counts, int peer) const { return counts ? counts[peer] * element_bytes_ : uniform_; }

  size_t uniform_;
  const PerPeer* per_peer_;
  size_t element_bytes_;
};

// Algorithms that move a whole vector per step (recursive doubling, binomial reduce)
// do it in chunks of this many bytes, so that their scratch is one chunk rather than
// one message, and so that a chunk reduced on one rank is already travelling up while
// the next one arrives.
constexpr size_t kChunkBytes = size_t{256} << 10;

inline size_t chunk_elements(size_t element_bytes) { return std::max<size_t>(1, kChunkBytes / element_bytes); }
// At least one chunk, even for count 0, so that ranks still exchange (empty) messages
// and a rank called with a different count is caught by the size check.
inline size_t chunk_count(size_t count, size_t per_chunk) {
  return count == 0 ? 1 : (count + per_chunk - 1) / per_chunk;
}

// i mod size for any int i (ring neighbours and block indices go below zero).
inline int ring_index(int i, int size) { return ((i % size) + size) % size; }

inline char* byte_at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
inline const char* byte_at(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }

// memcpy that accepts the in-place case (dst == src) and empty or null buffers.
inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes != 0 && dst != src) std::memcpy(dst, src, bytes);
}

}  // namespace tutti::collectives
