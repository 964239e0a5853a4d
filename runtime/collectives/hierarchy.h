// Hierarchical collectives, for a communicator whose ranks span several nodes with
// several ranks on each, as NCCL, UCC and Open MPI's han arrange them: shared memory
// within a node, the network between nodes, and only one rank per node and slice on
// the network. all_reduce of N elements on K nodes of L ranks:
//   1. within each node, a shared-memory reduce-scatter: local rank l holds slice l
//      (N / L elements) of the node's sum;
//   2. between nodes, an all_reduce of that slice among the K ranks of local rank l
//      (one per node), over the communicator's point-to-point transport;
//   3. within each node, a shared-memory all-gather of the L slices.
// Between nodes each rank sends 2(K - 1)/K of its N / L slice, and the L ranks of a
// node use the network side by side; the flat ring sends 2(P - 1)/P of N over each
// link, the links between nodes included (2 nodes of 2 ranks: 2N cross between the
// nodes instead of 3N, and toward half as nodes hold more ranks). N that L does not
// divide is padded in scratch (the padding is reduced with itself and dropped). AVG
// sums, then divides each slice once by the communicator's size before the all-gather.
//
// The others, with B bytes a rank:
//   broadcast: between nodes among the root's local rank (a binomial tree), then
//     within each node from that local rank;
//   reduce: within each node to the root's local rank, then between nodes among
//     those to the root (a binomial tree, or a ring for large vectors);
//   gather: within each node to the root's local rank (L blocks), then between
//     nodes among those to the root (K runs of L blocks); scatter the other way;
//   barrier: within each node, between nodes among local rank 0, within each node;
//   all_gather: between nodes among each local rank (K blocks of B); then, where the
//     ranks are numbered node by node, each node's L blocks lie together in the
//     output, and K all-gathers within the node fill them in place; otherwise one
//     all-gather within the node (L rows of K blocks) and each block copied to its
//     rank's place;
//   reduce_scatter: within each node a reduce-scatter of each node's L blocks (K of
//     them, in place where the ranks are numbered node by node; otherwise of the
//     input's blocks reordered by local rank, then node), then between nodes among
//     each local rank a reduce-scatter of those K blocks;
//   all_to_all: within each node, every local rank gathers its peers' blocks for
//     its own local rank on every node (an all_to_all of K blocks a peer); then
//     between nodes among each local rank an all_to_all of L blocks a node, which
//     sends K - 1 messages a rank across the network instead of P - 1. Two copies of
//     the whole array reorder the blocks between the steps.
// Numbered otherwise (Slurm's cyclic distribution), all_gather's and reduce_scatter's
// reordering copies the whole array once, which the flat ring does not. The selector
// (selector.cc) takes all_reduce, broadcast, all_gather and reduce_scatter; the other
// forms where every rank has a CPU of its own (cpu_share.h), up to sizes, or where
// TUTTI_ALGO forces them.
//
// Nodes of different sizes (3 + 2 ranks, or what a shrink leaves) have no groups of
// one local rank across every node; there local rank 0 of each node, its leader,
// carries what crosses between the nodes: all_reduce is the node's reduce to the
// leader, the leaders' all_reduce and the node's broadcast; broadcast goes within the
// root's node, among the leaders, then within the other nodes; reduce within each
// node to its leader (to the root on its node), then among those to the root; barrier
// as above. The other collectives keep the flat algorithms there.
//
// Built only where it applies: ranks on more than one node, two or more on some,
// numbered 0 up on each, which the ranks learn from each other at creation (an
// all-gather of their node and local rank).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "runtime/collectives/engine_setup.h"
#include "runtime/collectives/selector.h"
#include "runtime/collectives/subset_transport.h"
#include "runtime/common/cpu_share.h"
#include "runtime/common/deadline.h"
#include "runtime/operation/dtype.h"
#include "runtime/operation/op_context.h"
#include "runtime/store/client.h"
#include "runtime/transport/shm/group.h"
#include "runtime/transport/transport.h"

namespace tutti::collectives {

class Hierarchy {
 public:
  // Collective over the communicator's ranks (every rank calls it, whatever its
  // layout, since all take part in learning the layout), which tell each other their
  // CPUs (`cpus`, this process's: cpu_share.h). Returns null where the layout does not
  // allow a hierarchy. Throws Error as the transport and shm::Group::create do.
  static std::unique_ptr<Hierarchy> create(transport::Transport& whole, const EngineSetup& setup, const CpuShare& cpus,
                                           Scratch* scratch, Deadline deadline);

  // Whether a hierarchy may apply: the ranks span nodes (no rank has them all on its
  // node) and could fill two nodes with two each. Every rank answers alike, so that all
  // or none call create; whether the nodes are alike, only create learns.
  static bool may_apply(const EngineSetup& setup) { return setup.local_size < setup.size && setup.size >= 4; }

  void all_reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, const OpContext& context);
  void all_gather(const void* send, void* recv, size_t bytes, const OpContext& context);
  void reduce_scatter(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, const OpContext& context);
  void broadcast(void* buffer, size_t bytes, int root, const OpContext& context);
  void reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root, const OpContext& context);
  void gather(const void* send, void* recv, size_t bytes, int root, const OpContext& context);
  void scatter(const void* send, void* recv, size_t bytes, int root, const OpContext& context);
  void barrier(const OpContext& context);
  void all_to_all(const void* send, void* recv, size_t bytes, const OpContext& context);

  // kInPlace where the nodes are alike and the ranks numbered node by node,
  // kReordering where they are numbered otherwise, kLeaders where the nodes differ in
  // size (selector.h).
  HierarchyShape shape() const {
    if (!alike_) return HierarchyShape::kLeaders;
    return numbered_by_node_ ? HierarchyShape::kInPlace : HierarchyShape::kReordering;
  }
  // Whether every rank has a CPU of its own on its machine (cpu_share.h), which some
  // forms need to win (selector.cc).
  bool core_per_rank() const { return core_per_rank_; }
  int nodes() const { return cross_.size(); }
  int local_size() const { return local_size_; }
  size_t mapped_bytes() const { return node_->mapped_bytes(); }

 private:
  // Where a rank sits: its node's index (0 up, in the order of the launchers' node
  // numbers) and its local rank there.
  struct Place {
    int node;
    int local_rank;
  };

  Hierarchy(transport::Transport& whole, std::unique_ptr<transport::shm::Group> node, SubsetTransport cross, bool alike,
            bool core_per_rank, int node_index, int local_rank, int local_size, std::vector<Place> places,
            std::vector<int> rank_at);

  int world_size() const { return static_cast<int>(places_.size()); }

  // The forms for nodes of different sizes (alike_ false), through the leaders.
  void all_reduce_through_leaders(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                                  const OpContext& context);
  void broadcast_through_leaders(void* buffer, size_t bytes, int root, const OpContext& context);

  // Whether all_gather and reduce_scatter of blocks of block_bytes work on each node's
  // run in place (numbered_by_node_) rather than on a reordered copy, which small
  // arrays take even where they could (kReorderedUpToBytes, hierarchy.cc).
  bool works_in_place(size_t block_bytes) const;
  // Blocks of `bytes` from [node][local rank] order into rank order, and back (where
  // the ranks are numbered otherwise than node by node).
  void to_rank_order(const char* by_node, char* ranked, size_t bytes) const;
  void to_node_order(const char* ranked, char* by_node, size_t bytes) const;
  // For nodes alike only.
  int rank_of(size_t node, size_t local_rank) const {
    return rank_at_[node * static_cast<size_t>(local_size_) + local_rank];
  }

  transport::Transport& whole_;
  std::unique_ptr<transport::shm::Group> node_;
  // Nodes alike: the ranks of this local rank, one per node, by node. Otherwise the
  // leaders (local rank 0 of each node), by node, in which a rank that leads none
  // has rank -1 and takes no part.
  SubsetTransport cross_;
  // Whether every node holds as many ranks. Where they do not, only all_reduce,
  // broadcast, reduce and barrier have a form (through the leaders).
  const bool alike_;
  const bool core_per_rank_;
  const int node_index_;  // this rank's node, 0 up
  const int local_rank_;
  const int local_size_;
  const std::vector<Place> places_;  // by communicator rank
  const std::vector<int> rank_at_;   // the communicator rank at [node index][local rank]
  // Whether the ranks are numbered node by node (rank_at_[i] == i, as tutti launch
  // --nodes and Slurm's block distribution number them): each node's blocks of an
  // all_gather's output or a reduce_scatter's input then lie together, in local-rank
  // order, so the node's step works on them in place instead of on a reordered copy.
  const bool numbered_by_node_;
};

}  // namespace tutti::collectives
