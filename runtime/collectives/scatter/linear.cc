// Linear scatter: the root posts a send of every rank's block at once and waits for
// all; the others receive theirs straight into recv. The root's own block is copied
// (skipped in place, when recv already is that block of send). No scratch.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"

namespace tutti::collectives {

void scatter_linear(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root) {
  if (x.rank() != root) {
    x.recv(root, recv, bytes_per_rank);
    x.wait();
    return;
  }
  copy_bytes(recv, byte_at(send, root * bytes_per_rank), bytes_per_rank);
  for (int peer = 0; peer < x.size(); ++peer) {
    if (peer != root) x.send(peer, byte_at(send, peer * bytes_per_rank), bytes_per_rank);
  }
  x.wait();
}

}  // namespace tutti::collectives
