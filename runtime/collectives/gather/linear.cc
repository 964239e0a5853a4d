// Linear gather: the root posts a receive from every rank straight into that rank's
// place in recv and waits for all at once; the others send. The root's own block is
// copied (skipped in place, when send already is that place). No scratch.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"

namespace tutti::collectives {

void gather_linear(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root) {
  if (x.rank() != root) {
    x.send(root, send, bytes_per_rank);
    x.wait();
    return;
  }
  copy_bytes(byte_at(recv, root * bytes_per_rank), send, bytes_per_rank);
  for (int peer = 0; peer < x.size(); ++peer) {
    if (peer != root) x.recv(peer, byte_at(recv, peer * bytes_per_rank), bytes_per_rank);
  }
  x.wait();
}

}  // namespace tutti::collectives
