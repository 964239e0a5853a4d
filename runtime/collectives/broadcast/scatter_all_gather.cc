// Van de Geijn broadcast: the root's buffer is cut into P blocks (uneven when P does
// not divide the size; empty when the size is below P), a binomial tree scatters
// block v to the rank at distance v from the root, and a ring all-gather hands every
// block to every rank. Blocks are numbered from the root (block v belongs to rank
// root + v), so that every subtree's blocks are contiguous and each tree edge is one
// message. Everything moves in `buffer` itself: no scratch.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/binomial_tree.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/ring_phases.h"

namespace tutti::collectives {

void broadcast_scatter_all_gather(Exchange& x, void* buffer, size_t bytes, int root) {
  const int size = x.size();
  const BinomialTree tree(x.rank(), size, root);
  const Blocks blocks(bytes, size, 1);
  if (!tree.is_root()) {
    const int first = tree.vrank();
    x.recv(tree.parent(), byte_at(buffer, blocks.offset(first)), blocks.span_bytes(first, tree.subtree_size()));
    x.wait();
  }
  tree.each_child_farthest_first([&](const BinomialTree::Child& child) {
    x.send(child.rank, byte_at(buffer, blocks.offset(child.vrank)), blocks.span_bytes(child.vrank, child.blocks));
  });
  x.wait();
  // This rank now holds block vrank = rank - root, the shift the ring starts from.
  ring_all_gather(x, buffer, blocks, size - root);
}

}  // namespace tutti::collectives
