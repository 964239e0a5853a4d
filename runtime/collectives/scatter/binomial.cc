// Binomial-tree scatter from any root, for any P: the root sends each child its
// subtree's blocks straight from send (a run that wraps past the last rank goes as two
// messages, wrapped_run.h); a rank with children receives its subtree's blocks, keeps
// the first and passes the rest down, largest subtree first. The root's own block is
// copied, or already in place. Scratch: a rank with children holds its subtree in
// slot 0 (up to half of root's send); leaves receive straight into recv.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/binomial_tree.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/wrapped_run.h"

namespace tutti::collectives {

void scatter_binomial(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root) {
  const BinomialTree tree(x.rank(), x.size(), root);
  if (tree.is_root()) {
    copy_bytes(recv, byte_at(send, root * bytes_per_rank), bytes_per_rank);
    tree.each_child_farthest_first([&](const BinomialTree::Child& child) {
      send_wrapped(x, child.rank, send, bytes_per_rank, child.rank, child.blocks);
    });
    x.wait();
    return;
  }
  const int blocks = tree.subtree_size();
  char* subtree = tree.has_children() ? static_cast<char*>(x.context().scratch->get(0, blocks * bytes_per_rank))
                                      : static_cast<char*>(recv);
  if (tree.parent_is_root()) {
    recv_run(x, tree.parent(), subtree, bytes_per_rank, x.rank(), blocks);
  } else {
    x.recv(tree.parent(), subtree, blocks * bytes_per_rank);
  }
  x.wait();
  if (!tree.has_children()) return;
  copy_bytes(recv, subtree, bytes_per_rank);
  tree.each_child_farthest_first([&](const BinomialTree::Child& child) {
    x.send(child.rank, byte_at(subtree, (child.vrank - tree.vrank()) * bytes_per_rank), child.blocks * bytes_per_rank);
  });
  x.wait();
}

}  // namespace tutti::collectives
