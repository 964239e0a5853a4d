// Ring reduce: a ring reduce-scatter (uneven blocks when P does not divide count)
// leaves each rank one reduced block, which it sends to the root; the root receives
// them straight into recv and divides once for AVG. The root's own block lands in
// recv directly, and only after the root's last read of its send, so send == recv on
// the root (in place) is safe. Scratch: one block in each of slots 0 and 1.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/ring_phases.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {

void reduce_ring(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root) {
  const int size = x.size();
  const int rank = x.rank();
  const Blocks blocks(count, size, dtype_size(dtype));
  if (rank != root) {
    const void* own = ring_reduce_scatter(x, send, nullptr, blocks, dtype, op);
    x.send(root, own, blocks.bytes(rank));
    x.wait();
    return;
  }
  ring_reduce_scatter(x, send, byte_at(recv, blocks.offset(rank)), blocks, dtype, op);
  for (int peer = 0; peer < size; ++peer) {
    if (peer != root) x.recv(peer, byte_at(recv, blocks.offset(peer)), blocks.bytes(peer));
  }
  x.wait();
  finish_average(recv, count, dtype, op, size);
}

}  // namespace tutti::collectives
