// Pairwise reduce_scatter: in step s (1 .. P - 1) this rank sends block rank + s of
// its send straight to its owner and receives its own block from rank - s, folding it
// into recv, which starts as this rank's own block (already there in place, when recv
// is send's block `rank`: the sends never read that block). One division for AVG at
// the end. Any P; blocks are all count_per_rank. Scratch: one block in slot 0.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void reduce_scatter_pairwise(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype,
                             ReduceOp op) {
  const int size = x.size();
  const int rank = x.rank();
  const size_t block = count_per_rank * dtype_size(dtype);
  copy_bytes(recv, byte_at(send, rank * block), block);
  if (size > 1) {
    char* incoming = static_cast<char*>(x.context().scratch->get(0, block));
    for (int step = 1; step < size; ++step) {
      const int to = (rank + step) % size;
      x.recv(ring_index(rank - step, size), incoming, block);
      x.send(to, byte_at(send, to * block), block);
      x.wait();
      reduce_inplace(recv, incoming, count_per_rank, dtype, op);
    }
  }
  finish_average(recv, count_per_rank, dtype, op, size);
}

}  // namespace tutti::collectives
