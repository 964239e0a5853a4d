// Binomial-tree reduce to any root, for any P: each rank reduces its children's
// partial results (nearest child first) into its own and sends the sum to its parent;
// only the root divides, once, for AVG. The vector moves in chunks of kChunkBytes, so
// a parent reduces chunk k while its children already reduce chunk k + 1. Root
// accumulates in recv, which makes send == recv (in place) free; a rank with children
// accumulates in slot 1 and receives in slot 0 (one chunk each); leaves send straight
// from the user's send buffer and use no scratch.
#include <algorithm>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/binomial_tree.h"
#include "runtime/collectives/blocks.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void reduce_binomial(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root) {
  const BinomialTree tree(x.rank(), x.size(), root);
  const size_t element = dtype_size(dtype);
  const size_t per_chunk = chunk_elements(element);
  const size_t chunk_bytes = std::min(count, per_chunk) * element;
  Scratch& scratch = *x.context().scratch;
  char* incoming = tree.has_children() ? static_cast<char*>(scratch.get(0, chunk_bytes)) : nullptr;
  char* partial = tree.has_children() && !tree.is_root() ? static_cast<char*>(scratch.get(1, chunk_bytes)) : nullptr;

  const size_t chunks = chunk_count(count, per_chunk);
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const size_t first = chunk * per_chunk;
    const size_t n = std::min(per_chunk, count - first);
    const void* own = byte_at(send, first * element);
    void* accumulator = tree.is_root() ? byte_at(recv, first * element) : partial;
    const void* result = own;
    tree.each_child_nearest_first([&](const BinomialTree::Child& child) {
      x.recv(child.rank, incoming, n * element);
      x.wait();
      reduce_into(accumulator, result, incoming, n, dtype, op);
      result = accumulator;
    });
    if (tree.is_root()) {
      copy_bytes(accumulator, result, n * element);
    } else {
      x.send(tree.parent(), result, n * element);
      x.wait();
    }
  }
  if (tree.is_root()) finish_average(recv, count, dtype, op, x.size());
}

}  // namespace tutti::collectives
