// Linear all_to_all: every receive and every send posted at once, straight between
// the user's buffers (disjoint: the caller stages the in-place form), then one wait;
// this rank's own block is a copy. Lowest latency for small blocks, at the cost of
// 2(P - 1) requests in flight. Any P; no scratch.
#include "runtime/collectives/algorithms.h"

namespace tutti::collectives {

void all_to_all_linear(Exchange& x, const void* send, void* recv, const PeerBlocks& blocks) {
  const int size = x.size();
  const int rank = x.rank();
  copy_bytes(byte_at(recv, blocks.recv_offset(rank)), byte_at(send, blocks.send_offset(rank)), blocks.send_bytes(rank));
  // Posted in the order of the pairwise schedule, so that the first messages to go
  // are the ones the first peers are ready for.
  for (int step = 1; step < size; ++step) {
    const int from = ring_index(rank - step, size);
    x.recv(from, byte_at(recv, blocks.recv_offset(from)), blocks.recv_bytes(from));
  }
  for (int step = 1; step < size; ++step) {
    const int to = (rank + step) % size;
    x.send(to, byte_at(send, blocks.send_offset(to)), blocks.send_bytes(to));
  }
  x.wait();
}

}  // namespace tutti::collectives
