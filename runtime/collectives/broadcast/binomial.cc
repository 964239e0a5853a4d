// Binomial-tree broadcast from any root, for any P: each rank receives the whole
// buffer from its parent and sends it on to its children, largest subtree first, so
// ceil(log2 P) rounds. Everything moves in `buffer` itself (the root's already holds
// the data): no scratch, and no byte count ever splits, so uneven sizes do not arise.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/binomial_tree.h"

namespace tutti::collectives {

void broadcast_binomial(Exchange& x, void* buffer, size_t bytes, int root) {
  const BinomialTree tree(x.rank(), x.size(), root);
  if (!tree.is_root()) {
    x.recv(tree.parent(), buffer, bytes);
    x.wait();
  }
  tree.each_child_farthest_first([&](const BinomialTree::Child& child) { x.send(child.rank, buffer, bytes); });
  x.wait();
}

}  // namespace tutti::collectives
