// Dissemination barrier, ceil(log2 P) rounds for any P: in round k this rank sends an
// empty message to rank + 2^k and waits for one from rank - 2^k. After the last round
// every rank has heard, directly or through others, from every rank, so none leaves
// before all have entered.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"

namespace tutti::collectives {

void barrier_dissemination(Exchange& x) {
  const int size = x.size();
  const int rank = x.rank();
  for (int distance = 1; distance < size; distance <<= 1) {
    x.recv(ring_index(rank - distance, size), nullptr, 0);
    x.send((rank + distance) % size, nullptr, 0);
    x.wait();
  }
}

}  // namespace tutti::collectives
