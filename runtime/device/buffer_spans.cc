#include "runtime/device/buffer_spans.h"

namespace tutti::device {

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
  }
  return {0, 0};
}

}  // namespace tutti::device
