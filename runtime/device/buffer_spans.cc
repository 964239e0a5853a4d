#include "runtime/device/buffer_spans.h"

#include <algorithm>

namespace tutti::device {
namespace {

// The bytes from the buffer's start to the end of its highest nonempty block.
size_t blocks_end(const size_t* counts, const size_t* offsets, int size, size_t element) {
  size_t end = 0;
  for (int peer = 0; peer < size; ++peer) {
    if (counts[peer] > 0) end = std::max(end, (offsets[peer] + counts[peer]) * element);
  }
  return end;
}

}  // namespace

BufferSpans spans_of(const Call& call, int rank, int size) {
  const size_t block = call.count * dtype_size(static_cast<Dtype>(call.dtype));
  const size_t all = block * static_cast<size_t>(size);
  const bool root = rank == call.root;
  switch (call.kind) {
    case Kind::kAllReduce: return {block, block};
    case Kind::kReduce: return {block, root ? block : 0};
    case Kind::kBroadcast: return {root ? block : 0, block};
    case Kind::kAllGather: return {block, all};
    case Kind::kReduceScatter: return {all, block};
    case Kind::kGather: return {block, root ? all : 0};
    case Kind::kScatter: return {root ? all : 0, block};
    case Kind::kAllToAll: return {all, all};
    case Kind::kSend: return {block, 0};
    case Kind::kRecv: return {0, block};
    case Kind::kBarrier: return {0, 0};
    case Kind::kAllToAllV: {
      const size_t element = dtype_size(static_cast<Dtype>(call.dtype));
      const PerPeer& blocks = call.per_peer;
      return {blocks_end(blocks.send_counts, blocks.send_offsets, size, element),
              blocks_end(blocks.recv_counts, blocks.recv_offsets, size, element)};
    }
  }
  return {0, 0};
}

}  // namespace tutti::device
