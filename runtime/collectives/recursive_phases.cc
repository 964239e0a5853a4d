#include "runtime/collectives/recursive_phases.h"

#include <algorithm>

#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {
namespace {

// Sends vector's bytes [send_from, + send_bytes) to `to` and reduces what `from` sends,
// recv_bytes of it, into vector's bytes from recv_from, chunk by chunk (-1: that side
// has no messages). The peer runs the mirror image, so the chunks pair up; an empty
// side still sends its one empty message (chunk_count's), so that a rank called with
// another count is caught.
void send_and_reduce(Exchange& x, int to, size_t send_from, size_t send_bytes, int from, size_t recv_from,
                     size_t recv_bytes, char* vector, Dtype dtype, ReduceOp op) {
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
    if (i < sends) x.send(to, vector + send_from + first, std::min(chunk, send_bytes - first));
    x.wait();
    if (in > 0) reduce_inplace(vector + recv_from + first, incoming, in / element, dtype, op);
  }
}

// Byte offset of virtual rank v's run; run_offset(p) is the vector's size.
size_t run_offset(const FoldedRanks& ranks, const Blocks& blocks, int v) { return blocks.offset(ranks.first_block(v)); }

}  // namespace

void fold_in(Exchange& x, const FoldedRanks& ranks, char* vector, size_t bytes, Dtype dtype, ReduceOp op) {
  const int rank = x.rank();
  if (ranks.sits_out()) send_and_reduce(x, rank + 1, 0, bytes, -1, 0, 0, vector, dtype, op);
  if (ranks.takes_in()) send_and_reduce(x, -1, 0, 0, rank - 1, 0, bytes, vector, dtype, op);
}

void halving_reduce_scatter(Exchange& x, const FoldedRanks& ranks, char* vector, const Blocks& blocks, Dtype dtype,
                            ReduceOp op) {
  const int me = ranks.virtual_rank();
  int lo = 0, hi = ranks.pof2();
  for (int distance = ranks.pof2() / 2; distance >= 1; distance /= 2) {
    const int mid = lo + distance;
    // Keep the half this rank is in; the partner keeps the other.
    const int keep_lo = me < mid ? lo : mid, keep_hi = me < mid ? mid : hi;
    const int give_lo = me < mid ? mid : lo, give_hi = me < mid ? hi : mid;
    const size_t give = run_offset(ranks, blocks, give_lo), keep = run_offset(ranks, blocks, keep_lo);
    const int partner = ranks.rank_of(me ^ distance);
    send_and_reduce(x, partner, give, run_offset(ranks, blocks, give_hi) - give, partner, keep,
                    run_offset(ranks, blocks, keep_hi) - keep, vector, dtype, op);
    lo = keep_lo;
    hi = keep_hi;
  }
}

void doubling_all_gather(Exchange& x, const FoldedRanks& ranks, char* vector, const Blocks& blocks,
                         int first_distance) {
  const int me = ranks.virtual_rank();
  for (int distance = first_distance; distance < ranks.pof2(); distance <<= 1) {
    const int mine = me & ~(distance - 1);
    const int theirs = mine ^ distance;
    const size_t mine_at = run_offset(ranks, blocks, mine), theirs_at = run_offset(ranks, blocks, theirs);
    const int partner = ranks.rank_of(me ^ distance);
    x.recv(partner, vector + theirs_at, run_offset(ranks, blocks, theirs + distance) - theirs_at);
    x.send(partner, vector + mine_at, run_offset(ranks, blocks, mine + distance) - mine_at);
    x.wait();
  }
}

}  // namespace tutti::collectives
