// Recursive-doubling all_gather, log2(p) steps among a power of two of ranks
// (recursive_phases.h; on other P, the ranks beyond the power of two hand their blocks
// in first and get the whole result back last, two steps more). Each pair of ranks
// talks both ways in every step, where Bruck's sends to one rank and receives from
// another: on ranks that share cores, each step then waits for one peer, not two
// (docs/benchmarks.md). Straight into recv, no scratch; in place when send already is
// this rank's place in recv.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/recursive_phases.h"

namespace tutti::collectives {

void all_gather_recursive_doubling(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  const int size = x.size();
  const int rank = x.rank();
  const FoldedRanks ranks(size, rank);
  char* all = static_cast<char*>(recv);
  const Blocks blocks(size * bytes_per_rank, size, 1);
  char* mine = all + rank * bytes_per_rank;
  if (size > 1 && ranks.pof2() == size && mine != static_cast<const char*>(send)) {
    // The first step sends this rank's block straight from send, and copies it into
    // recv while the partner's arrives, as Open MPI sends from send. Sent from recv,
    // beside where the partner's block was being written, 2 ranks between emulated
    // nodes over UCX's shared memory (cma) took twice as long: 256 KiB a rank in 53.4
    // us, now 28.6 (Open MPI 27.1); the ring likewise (ring_phases.h).
    const int partner = ranks.rank_of(ranks.virtual_rank() ^ 1);
    x.recv(partner, all + partner * bytes_per_rank, bytes_per_rank);
    x.send(partner, send, bytes_per_rank);
    copy_bytes(mine, send, bytes_per_rank);
    x.wait();
    doubling_all_gather(x, ranks, all, blocks, 2);
    return;
  }
  copy_bytes(mine, send, bytes_per_rank);
  if (ranks.sits_out()) {
    x.send(rank + 1, all + rank * bytes_per_rank, bytes_per_rank);
    x.wait();  // the whole result comes back over the block it read
    x.recv(rank + 1, all, size * bytes_per_rank);
    x.wait();
    return;
  }
  if (ranks.takes_in()) {
    x.recv(rank - 1, all + (rank - 1) * bytes_per_rank, bytes_per_rank);
    x.wait();
  }
  doubling_all_gather(x, ranks, all, blocks);
  if (ranks.takes_in()) {
    x.send(rank - 1, all, size * bytes_per_rank);
    x.wait();
  }
}

}  // namespace tutti::collectives
