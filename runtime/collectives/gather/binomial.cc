// Binomial-tree gather to any root, for any P: a rank collects its subtree's blocks
// (vranks v .. v + n - 1, contiguous) and sends them to its parent as one message.
// The root receives each child's run straight into recv, where it may wrap past the
// last rank (two messages then, wrapped_run.h); its own block is copied, or already in
// place. Scratch: a rank with children gathers its subtree in slot 0 (up to half of
// root's recv, for the root's largest child); leaves send from the user's buffer.
#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/binomial_tree.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/wrapped_run.h"

namespace tutti::collectives {

void gather_binomial(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root) {
  const BinomialTree tree(x.rank(), x.size(), root);
  if (tree.is_root()) {
    copy_bytes(byte_at(recv, root * bytes_per_rank), send, bytes_per_rank);
    tree.each_child_nearest_first([&](const BinomialTree::Child& child) {
      recv_wrapped(x, child.rank, recv, bytes_per_rank, child.rank, child.blocks);
    });
    x.wait();
    return;
  }
  const int blocks = tree.subtree_size();
  const void* subtree = send;
  if (tree.has_children()) {
    char* gathered = static_cast<char*>(x.context().scratch->get(0, blocks * bytes_per_rank));
    copy_bytes(gathered, send, bytes_per_rank);
    tree.each_child_nearest_first([&](const BinomialTree::Child& child) {
      x.recv(child.rank, byte_at(gathered, (child.vrank - tree.vrank()) * bytes_per_rank),
             child.blocks * bytes_per_rank);
    });
    x.wait();
    subtree = gathered;
  }
  if (tree.parent_is_root()) {
    send_run(x, tree.parent(), subtree, bytes_per_rank, x.rank(), blocks);
  } else {
    x.send(tree.parent(), subtree, blocks * bytes_per_rank);
  }
  x.wait();
}

}  // namespace tutti::collectives
