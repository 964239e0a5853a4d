// Bruck all_gather, ceil(log2 P) steps for any P: before the step at distance d this
// rank holds blocks rank .. rank + d - 1 (mod P) of the result; it sends the first
// min(d, P - d) of them to rank - d and receives as many, starting at block rank + d,
// from rank + d. The blocks stay in their final places in recv, a run that wraps past
// the last rank going as two messages (wrapped_run.h), so there is no rotation at the
// end and no scratch. In place when send already is this rank's place in recv.
#include <algorithm>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/wrapped_run.h"

namespace tutti::collectives {

void all_gather_bruck(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  const int size = x.size();
  const int rank = x.rank();
  copy_bytes(byte_at(recv, rank * bytes_per_rank), send, bytes_per_rank);
  for (int distance = 1; distance < size; distance <<= 1) {
    const int n = std::min(distance, size - distance);
    const int from = (rank + distance) % size;
    recv_wrapped(x, from, recv, bytes_per_rank, from, n);
    send_wrapped(x, ring_index(rank - distance, size), recv, bytes_per_rank, rank, n);
    x.wait();
  }
}

}  // namespace tutti::collectives
