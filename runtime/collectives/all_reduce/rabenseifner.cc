// Rabenseifner's all_reduce: a recursive-halving reduce-scatter, each rank dividing its
// own run for AVG, then a recursive-doubling all-gather (recursive_phases.h), 2 log2(p)
// steps among a power of two of ranks where the ring takes 2 (P - 1), moving the ring's
// 2 (P - 1) / P of the vector; recursive doubling moves the whole vector log2(p) times.
// On other P, the ranks beyond the power of two hand their vectors in first and get
// the result back last, two steps more. Blocks are uneven when P does not divide count
// (empty when count < P). recv is the accumulator, so in place (send == recv) needs
// nothing more. Scratch: one chunk (slot 1).
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/recursive_phases.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void all_reduce_rabenseifner(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op) {
  const int size = x.size();
  const int rank = x.rank();
  const Blocks blocks(count, size, dtype_size(dtype));
  const size_t bytes = blocks.offset(size);
  const FoldedRanks ranks(size, rank);
  char* vector = static_cast<char*>(recv);
  copy_bytes(vector, send, bytes);

  fold_in(x, ranks, vector, bytes, dtype, op);
  if (ranks.sits_out()) {
    x.recv(rank + 1, vector, bytes);
    x.wait();
    return;
  }
  halving_reduce_scatter(x, ranks, vector, blocks, dtype, op);
  const int me = ranks.virtual_rank();
  const int first = ranks.first_block(me);
  const int own_blocks = ranks.first_block(me + 1) - first;
  finish_average(vector + blocks.offset(first), blocks.span_bytes(first, own_blocks) / dtype_size(dtype), dtype, op,
                 size);
  doubling_all_gather(x, ranks, vector, blocks);
  if (ranks.takes_in()) {
    x.send(rank - 1, vector, bytes);
    x.wait();
  }
}

}  // namespace tutti::collectives
