// Ring all_reduce: a ring reduce-scatter leaves each rank one reduced block, which it
// divides for AVG (each block once, by its one owner), then a ring all-gather hands
// every block to every rank. Blocks are uneven when P does not divide count (empty
// when count < P). In place (send == recv) works because the reduce-scatter writes
// recv only at this rank's own block, after its last read. Scratch: one block in each
// of slots 0 and 1.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/ring_phases.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void all_reduce_ring(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op) {
  const Blocks blocks(count, x.size(), dtype_size(dtype));
  void* own = byte_at(recv, blocks.offset(x.rank()));
  ring_reduce_scatter(x, send, own, blocks, dtype, op);
  finish_average(own, blocks.elements(x.rank()), dtype, op, x.size());
  ring_all_gather(x, recv, blocks, 0);
}

}  // namespace tutti::collectives
