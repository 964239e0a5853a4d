// Ring all_gather: P - 1 ring steps pass every block on to the right, the first this
// rank's own straight from send, which is copied into its place in recv meanwhile
// (skipped in place, when send already is that place). Blocks are all bytes_per_rank,
// zero included. No scratch.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/ring_phases.h"

namespace tutti::collectives {

void all_gather_ring(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  const int size = x.size();
  const void* place = byte_at(recv, x.rank() * bytes_per_rank);
  ring_all_gather(x, recv, Blocks(bytes_per_rank * size, size, 1), 0, place == send ? nullptr : send);
}

}  // namespace tutti::collectives
