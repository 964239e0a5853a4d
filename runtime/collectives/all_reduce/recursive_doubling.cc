// Recursive-doubling all_reduce for any P: the ranks beyond a power of two fold in
// first (folded_ranks.h), handing their vectors over; the p ranks left swap and reduce
// whole vectors with the partner at distance 1, 2, 4, ... in their own numbering; then
// the ranks that took a vector in hand the result back. Every rank (sitters-out
// included) divides the same SUM once for AVG, so all end with identical bits. Vectors
// move in chunks of kChunkBytes, so the scratch is one chunk (slot 0) whatever the
// count. recv is the accumulator: a rank's first swap sends from send and reduces send
// and what arrives into recv, so send is never first copied into recv, and in place
// (send == recv) needs nothing more.
#include <algorithm>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/folded_ranks.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {
namespace {

// Chunk by chunk: sends `source` to `to` unless it is -1, and, unless `from` is -1,
// reduces `source` and what arrives from `from` into `vector` (which may be source).
void swap_and_reduce(Exchange& x, int to, int from, const void* source, void* vector, size_t count, Dtype dtype,
                     ReduceOp op) {
  const size_t element = dtype_size(dtype);
  const size_t per_chunk = chunk_elements(element);
  char* incoming =
      from < 0 ? nullptr : static_cast<char*>(x.context().scratch->get(0, std::min(count, per_chunk) * element));
  const size_t chunks = chunk_count(count, per_chunk);
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    const size_t first = chunk * per_chunk;
    const size_t n = std::min(per_chunk, count - first);
    const char* part = byte_at(source, first * element);
    if (from >= 0) x.recv(from, incoming, n * element);
    if (to >= 0) x.send(to, part, n * element);
    x.wait();
    if (from >= 0) reduce_into(byte_at(vector, first * element), part, incoming, n, dtype, op);
  }
}

}  // namespace

void all_reduce_recursive_doubling(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op) {
  const int size = x.size();
  const int rank = x.rank();
  const size_t bytes = count * dtype_size(dtype);
  const FoldedRanks ranks(size, rank);

  if (ranks.sits_out()) {
    swap_and_reduce(x, rank + 1, -1, send, recv, count, dtype, op);
    x.recv(rank + 1, recv, bytes);
    x.wait();
    finish_average(recv, count, dtype, op, size);
    return;
  }
  // Where the vector is so far: send until a swap has reduced it into recv.
  const void* vector = send;
  if (ranks.takes_in()) {
    swap_and_reduce(x, -1, rank - 1, vector, recv, count, dtype, op);
    vector = recv;
  }

  const int me = ranks.virtual_rank();
  for (int mask = 1; mask < ranks.pof2(); mask <<= 1) {
    const int partner = ranks.rank_of(me ^ mask);
    swap_and_reduce(x, partner, partner, vector, recv, count, dtype, op);
    vector = recv;
  }
  if (vector == send) copy_bytes(recv, send, bytes);  // one rank: nothing to swap

  if (ranks.takes_in()) {
    x.send(rank - 1, recv, bytes);
    x.wait();
  }
  finish_average(recv, count, dtype, op, size);
}

}  // namespace tutti::collectives
