// Pairwise all_to_all, any P: in step s (1 .. P - 1) this rank sends its block for
// rank + s and receives the block from rank - s, straight between the user's buffers
// (disjoint: the caller stages the in-place form); its own block is a copy. One peer
// in each direction per step keeps every link equally busy. No scratch.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"

namespace tutti::collectives {

void all_to_all_pairwise(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  const int size = x.size();
  const int rank = x.rank();
  copy_bytes(byte_at(recv, rank * bytes_per_rank), byte_at(send, rank * bytes_per_rank), bytes_per_rank);
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size;
    const int from = ring_index(rank - step, size);
    x.recv(from, byte_at(recv, from * bytes_per_rank), bytes_per_rank);
    x.send(to, byte_at(send, to * bytes_per_rank), bytes_per_rank);
    x.wait();
  }
}

}  // namespace tutti::collectives
