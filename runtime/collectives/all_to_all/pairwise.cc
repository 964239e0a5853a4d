// Pairwise all_to_all, any P: in step s (1 .. P - 1) this rank sends its block for
// rank + s and receives the block from rank - s, straight between the user's buffers
// (disjoint: the caller stages the in-place form); its own block is a copy. One peer
// in each direction per step keeps every link equally busy. No scratch.
#include "runtime/collectives/algorithms.h"

namespace tutti::collectives {

void all_to_all_pairwise(Exchange& x, const void* send, void* recv, const PeerBlocks& blocks) {
  const int size = x.size();
  const int rank = x.rank();
  copy_bytes(byte_at(recv, blocks.recv_offset(rank)), byte_at(send, blocks.send_offset(rank)), blocks.send_bytes(rank));
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size;
    const int from = ring_index(rank - step, size);
    x.recv(from, byte_at(recv, blocks.recv_offset(from)), blocks.recv_bytes(from));
    x.send(to, byte_at(send, blocks.send_offset(to)), blocks.send_bytes(to));
    x.wait();
  }
}

}  // namespace tutti::collectives
