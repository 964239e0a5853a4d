// Binomial-tree reduce to any root, for any P: each rank reduces its children's
// partial results (nearest child first) into its own and sends the sum to its parent;
// only the root divides, once, for AVG. The vector moves in chunks of kChunkBytes, so
// a parent reduces chunk k while its children already reduce chunk k + 1. Root
// accumulates in recv, which makes send == recv (in place) free, and receives into
// slots 0 and 2 in turn (reduce_at_root_pipelined); another rank with children
// accumulates in slot 1 and receives in slot 0 (one chunk each); leaves send straight
// from the user's send buffer and use no scratch.
#include <algorithm>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/binomial_tree.h"
#include "runtime/collectives/blocks.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {
namespace {

// The root, whose data goes nowhere: it receives its children's chunks in order,
// (chunk 0, nearest child), (chunk 0, next child), ..., into two buffers in turn, and
// posts each receive before it reduces the one before. A message that came while the
// root reduced lands in place, not in the transport's buffers to be copied again when
// its receive is posted (over TCP, every chunk of a 2-rank reduce).
void reduce_at_root_pipelined(Exchange& x, const BinomialTree& tree, const void* send, void* recv, size_t count,
                              size_t per_chunk, size_t chunks, Dtype dtype, ReduceOp op, char* first_incoming) {
  const size_t element = dtype_size(dtype);
  int children[32] = {};  // a binomial tree of under 2^31 ranks has fewer
  int child_count = 0;
  tree.each_child_nearest_first([&](const BinomialTree::Child& child) { children[child_count++] = child.rank; });
  char* incoming[2] = {first_incoming,
                       static_cast<char*>(x.context().scratch->get(2, std::min(count, per_chunk) * element))};
  const size_t steps = chunks * static_cast<size_t>(child_count);
  auto first_of = [&](size_t step) { return step / static_cast<size_t>(child_count) * per_chunk; };
  auto elements_of = [&](size_t step) { return std::min(per_chunk, count - first_of(step)); };
  auto post = [&](size_t step) {
    x.recv(children[step % static_cast<size_t>(child_count)], incoming[step % 2], elements_of(step) * element);
  };
  post(0);
  for (size_t step = 0; step < steps; ++step) {
    if (step + 1 < steps) post(step + 1);
    x.wait_first(1);
    const size_t first = first_of(step);
    void* accumulator = byte_at(recv, first * element);
    const void* result = step % static_cast<size_t>(child_count) == 0 ? byte_at(send, first * element) : accumulator;
    reduce_into(accumulator, result, incoming[step % 2], elements_of(step), dtype, op);
  }
  finish_average(recv, count, dtype, op, x.size());
}

}  // namespace

void reduce_binomial(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root) {
  const BinomialTree tree(x.rank(), x.size(), root);
  const size_t element = dtype_size(dtype);
  const size_t per_chunk = chunk_elements(element);
  const size_t chunk_bytes = std::min(count, per_chunk) * element;
  Scratch& scratch = *x.context().scratch;
  char* incoming = tree.has_children() ? static_cast<char*>(scratch.get(0, chunk_bytes)) : nullptr;
  char* partial = tree.has_children() && !tree.is_root() ? static_cast<char*>(scratch.get(1, chunk_bytes)) : nullptr;

  const size_t chunks = chunk_count(count, per_chunk);
  if (tree.is_root() && tree.has_children() && chunks > 1) {
    reduce_at_root_pipelined(x, tree, send, recv, count, per_chunk, chunks, dtype, op, incoming);
    return;
  }
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
