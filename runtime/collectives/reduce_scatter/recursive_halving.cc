// Recursive-halving reduce_scatter, log2(p) steps among a power of two of ranks, where
// pairwise takes P - 1 (recursive_phases.h; on other P, the ranks beyond the power of
// two hand their whole vectors in first and get their blocks back last, two steps
// more). It works on a copy of the whole vector, reduced in halves, since the user's
// send is never written. The same (P - 1) / P of the vector leaves each rank as in
// pairwise, in log2(p) messages instead of P - 1. One division for AVG at the end.
// Scratch: the working copy (slot 0) and one chunk for what arrives (slot 1). In place
// when recv is send's block `rank`.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/recursive_phases.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void reduce_scatter_recursive_halving(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype,
                                      ReduceOp op) {
  const int size = x.size();
  const int rank = x.rank();
  const Blocks blocks(count_per_rank * size, size, dtype_size(dtype));
  const size_t block = blocks.bytes(0);
  const FoldedRanks ranks(size, rank);
  char* work = static_cast<char*>(x.context().scratch->get(0, size * block));
  copy_bytes(work, send, size * block);

  fold_in(x, ranks, work, size * block, dtype, op);
  if (ranks.sits_out()) {
    x.recv(rank + 1, recv, block);
    x.wait();
  } else {
    halving_reduce_scatter(x, ranks, work, blocks, dtype, op);
    if (ranks.takes_in()) {
      x.send(rank - 1, work + (rank - 1) * block, block);
      x.wait();
    }
    copy_bytes(recv, work + rank * block, block);
  }
  finish_average(recv, count_per_rank, dtype, op, size);
}

}  // namespace tutti::collectives
