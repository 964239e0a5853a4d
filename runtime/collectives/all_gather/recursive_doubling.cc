// Recursive-doubling all_gather, log2(p) steps among a power of two of ranks
// (folded_ranks.h: on other P, the ranks beyond it hand their blocks in first and get
// the whole result back last, two steps more). Before the step at distance d, virtual
// rank v holds the blocks of virtual ranks v & ~(d - 1) .. + d - 1, one contiguous run
// of recv; it swaps that run with virtual rank v ^ d, whose run lies right beside it.
// Each pair of ranks talks both ways in every step, where Bruck's sends to one rank
// and receives from another: on ranks that share cores, each step then waits for one
// peer, not two (docs/benchmarks.md). Straight into recv, no scratch; in place when
// send already is this rank's place in recv.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/folded_ranks.h"

namespace tutti::collectives {

void all_gather_recursive_doubling(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  const int size = x.size();
  const int rank = x.rank();
  const FoldedRanks ranks(size, rank);
  copy_bytes(byte_at(recv, rank * bytes_per_rank), send, bytes_per_rank);
  if (ranks.sits_out()) {
    x.send(rank + 1, byte_at(recv, rank * bytes_per_rank), bytes_per_rank);
    x.wait();  // the whole result comes back over the block it read
    x.recv(rank + 1, recv, size * bytes_per_rank);
    x.wait();
    return;
  }
  if (ranks.takes_in()) {
    x.recv(rank - 1, byte_at(recv, (rank - 1) * bytes_per_rank), bytes_per_rank);
    x.wait();
  }

  // The bytes of the run of virtual ranks [v, v + n).
  auto run_offset = [&](int v) { return ranks.first_block(v) * bytes_per_rank; };
  auto run_bytes = [&](int v, int n) { return (ranks.first_block(v + n) - ranks.first_block(v)) * bytes_per_rank; };
  const int me = ranks.virtual_rank();
  for (int distance = 1; distance < ranks.pof2(); distance <<= 1) {
    const int mine = me & ~(distance - 1);
    const int theirs = mine ^ distance;
    const int partner = ranks.rank_of(me ^ distance);
    x.recv(partner, byte_at(recv, run_offset(theirs)), run_bytes(theirs, distance));
    x.send(partner, byte_at(recv, run_offset(mine)), run_bytes(mine, distance));
    x.wait();
  }

  if (ranks.takes_in()) {
    x.send(rank - 1, recv, size * bytes_per_rank);
    x.wait();
  }
}

}  // namespace tutti::collectives
