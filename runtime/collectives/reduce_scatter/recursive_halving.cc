// Recursive-halving reduce_scatter, log2(p) steps among a power of two of ranks, where
// pairwise takes P - 1 (folded_ranks.h: on other P, the ranks beyond it hand their
// whole vectors in first and get their blocks back last, two steps more). A working
// copy of the whole vector is reduced in halves: virtual rank v, responsible for the
// blocks of virtual ranks [lo, hi), sends the half that its partner v ^ d keeps
// (d = (hi - lo) / 2) and reduces the partner's copy of its own half into its own,
// until it holds its blocks alone. The same (P - 1) / P of the vector leaves each rank
// as in pairwise, in log2(p) messages instead of P - 1. One division for AVG at the
// end. Scratch: the working vector (slot 0) and one chunk for what arrives (slot 1),
// the halves moving kChunkBytes at a time. In place when recv is send's block `rank`.
#include <algorithm>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/folded_ranks.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {
namespace {

// Sends work's bytes [send_from, + send_bytes) to `to` and reduces what `from` sends,
// recv_bytes of it, into work's bytes from recv_from, chunk by chunk (-1: that side
// has no messages). The peer runs the mirror image, so the chunks pair up; an empty
// side still sends its one empty message (chunk_count's), so that a rank called with
// another count is caught.
void send_and_reduce(Exchange& x, int to, size_t send_from, size_t send_bytes, int from, size_t recv_from,
                     size_t recv_bytes, char* work, Dtype dtype, ReduceOp op) {
  const size_t element = dtype_size(dtype);
  const size_t per_chunk = chunk_elements(element);
  const size_t chunk = per_chunk * element;
  const size_t sends = to < 0 ? 0 : chunk_count(send_bytes / element, per_chunk);
  const size_t recvs = from < 0 ? 0 : chunk_count(recv_bytes / element, per_chunk);
  char* incoming = recvs == 0 ? nullptr : static_cast<char*>(x.context().scratch->get(1, std::min(recv_bytes, chunk)));
  for (size_t i = 0; i < std::max(sends, recvs); ++i) {
    const size_t first = i * chunk;
    const size_t in = i < recvs ? std::min(chunk, recv_bytes - first) : 0;
    if (i < recvs) x.recv(from, incoming, in);
    if (i < sends) x.send(to, work + send_from + first, std::min(chunk, send_bytes - first));
    x.wait();
    if (in > 0) reduce_inplace(work + recv_from + first, incoming, in / element, dtype, op);
  }
}

}  // namespace

void reduce_scatter_recursive_halving(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype,
                                      ReduceOp op) {
  const int size = x.size();
  const int rank = x.rank();
  const size_t block = count_per_rank * dtype_size(dtype);
  const FoldedRanks ranks(size, rank);
  char* work = static_cast<char*>(x.context().scratch->get(0, size * block));
  copy_bytes(work, send, size * block);

  if (ranks.sits_out()) {
    send_and_reduce(x, rank + 1, 0, size * block, -1, 0, 0, work, dtype, op);
    x.recv(rank + 1, recv, block);
    x.wait();
    finish_average(recv, count_per_rank, dtype, op, size);
    return;
  }
  if (ranks.takes_in()) send_and_reduce(x, -1, 0, 0, rank - 1, 0, size * block, work, dtype, op);

  auto offset = [&](int v) { return ranks.first_block(v) * block; };
  const int me = ranks.virtual_rank();
  int lo = 0, hi = ranks.pof2();
  for (int distance = ranks.pof2() / 2; distance >= 1; distance /= 2) {
    const int mid = lo + distance;
    const int partner = ranks.rank_of(me ^ distance);
    // Keep the half this rank is in; the partner keeps the other.
    const int keep_lo = me < mid ? lo : mid, keep_hi = me < mid ? mid : hi;
    const int give_lo = me < mid ? mid : lo, give_hi = me < mid ? hi : mid;
    send_and_reduce(x, partner, offset(give_lo), offset(give_hi) - offset(give_lo), partner, offset(keep_lo),
                    offset(keep_hi) - offset(keep_lo), work, dtype, op);
    lo = keep_lo;
    hi = keep_hi;
  }

  if (ranks.takes_in()) {
    x.send(rank - 1, work + (rank - 1) * block, block);
    x.wait();
  }
  copy_bytes(recv, work + rank * block, block);
  finish_average(recv, count_per_rank, dtype, op, size);
}

}  // namespace tutti::collectives
