// Ring reduce_scatter: the ring reduce-scatter of ring_phases.h over P equal blocks
// of count_per_rank elements, leaving this rank's block straight in recv, then one
// division for AVG. In place (recv is send's block `rank`) works because that block
// is written only in the last step, after its last read. Scratch: one block in each of
// slots 0 and 1.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/ring_phases.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void reduce_scatter_ring(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype, ReduceOp op) {
  const int size = x.size();
  ring_reduce_scatter(x, send, recv, Blocks(count_per_rank * size, size, dtype_size(dtype)), dtype, op);
  finish_average(recv, count_per_rank, dtype, op, size);
}

}  // namespace tutti::collectives
