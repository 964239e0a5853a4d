#include "runtime/collectives/hierarchy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/exchange.h"
#include "runtime/collectives/run_flat.h"
#include "runtime/collectives/selector.h"
#include "runtime/common/concat.h"
#include "runtime/common/cpu_share.h"
#include "runtime/common/log.h"
#include "runtime/operation/reduce_op.h"

namespace tutti::collectives {
namespace {

// Where a rank sits, and on what CPUs, as every rank tells every other at creation.
struct Seat {
  int32_t node;
  int32_t local_rank;
  CpuShare cpus;
};

// Every rank's seat, by an all-gather over the whole transport. Its messages carry
// number 0, which no collective takes (they count from 1).
std::vector<Seat> exchange_seats(transport::Transport& whole, const EngineSetup& setup, const CpuShare& cpus,
                                 Scratch* scratch, Deadline deadline) {
  OpContext context;
  context.name = "the layout exchange of init";
  context.seq = 0;
  context.deadline = deadline;
  context.timeout_ms = deadline.remaining_ms();
  context.fault = setup.fault;
  context.where = setup.where;
  context.scratch = scratch;
  const Seat mine{setup.node_rank, setup.local_rank, cpus};
  std::vector<Seat> seats(static_cast<size_t>(setup.size));
  Exchange x(whole, context);
  all_gather_bruck(x, &mine, seats.data(), sizeof(Seat));
  return seats;
}

// Between the nodes, the algorithms the selector takes for a flat communicator of as
// many ranks (flat_choice), as all_gather and reduce_scatter below do; in place.
void all_reduce_across(Exchange& cross, void* data, size_t count, Dtype dtype, ReduceOp op) {
  run_all_reduce(flat_choice(Kind::kAllReduce, count * dtype_size(dtype), cross.size()), cross, data, data, count,
                 dtype, op);
}

// Where the ranks are numbered node by node, all_gather and reduce_scatter can work
// on each node's run of blocks in place, but that takes one node step per node, each a
// meeting of the node's ranks; the reordered form takes one step over a copy of the
// whole array. Up to this many bytes of array the copy costs less than the meetings it
// saves, where both collectives won. 4 ranks on 2 emulated nodes over UCX's shared
// memory, far state (619-685 ns), three rounds alternating, µs, by the whole array's
// size, in place / reordered (2026-11-29): all_gather at 64 B
// 21.2-22.6 / 15.0-23.1, 4 KiB 23.8-29.7 / 17.4-21.7, 16 KiB 25.0-35.5 / 16.0-24.5,
// but 32 KiB 25.9-36.6 / 30.6-41.0 and level at 256 KiB; reduce_scatter at 64 B
// 16.4-23.1 / 15.0-17.5, 4 KiB 22.8-32.3 / 16.9-20.8, 16 KiB 25.8-34.7 / 18.2-25.9,
// 32 KiB 25.9-32.8 / 19.8-36.0, and 58.5-76.6 / 64.6-75.0 at 256 KiB.
constexpr size_t kReorderedUpToBytes = 16 << 10;

}  // namespace

Hierarchy::Hierarchy(transport::Transport& whole, std::unique_ptr<transport::shm::Group> node, SubsetTransport cross,
                     bool alike, bool core_per_rank, int node_index, int local_rank, int local_size,
                     std::vector<Place> places, std::vector<int> rank_at)
    : whole_(whole),
      node_(std::move(node)),
      cross_(std::move(cross)),
      alike_(alike),
      core_per_rank_(core_per_rank),
      node_index_(node_index),
      local_rank_(local_rank),
      local_size_(local_size),
      places_(std::move(places)),
      rank_at_(std::move(rank_at)),
      numbered_by_node_([this] {
        for (size_t i = 0; i < rank_at_.size(); ++i) {
          if (rank_at_[i] != static_cast<int>(i)) return false;
        }
        return true;
      }()) {}

std::unique_ptr<Hierarchy> Hierarchy::create(transport::Transport& whole, const EngineSetup& setup,
                                             const CpuShare& cpus, Scratch* scratch, Deadline deadline) {
  const std::vector<Seat> seats = exchange_seats(whole, setup, cpus, scratch, deadline);
  // By node (in the order of the launchers' node numbers), the ranks of each local rank.
  std::map<int32_t, std::vector<int>> ranks_of_node;
  for (int rank = 0; rank < setup.size; ++rank) {
    std::vector<int>& ranks = ranks_of_node[seats[rank].node];
    const int32_t local = seats[rank].local_rank;
    if (local < 0) return nullptr;  // a launcher that did not say
    if (static_cast<size_t>(local) >= ranks.size()) ranks.resize(static_cast<size_t>(local) + 1, -1);
    ranks[static_cast<size_t>(local)] = rank;
  }
  // Every rank in a seat of its own, numbered 0 up on each node: two that named the
  // same local rank would leave the count short of the world's.
  size_t seated = 0, largest = 0;
  bool alike = true;
  for (const auto& [node, ranks] : ranks_of_node) {
    if (std::find(ranks.begin(), ranks.end(), -1) != ranks.end()) seated = SIZE_MAX / 2;
    seated += ranks.size();
    largest = std::max(largest, ranks.size());
    alike = alike && ranks.size() == ranks_of_node.begin()->second.size();
  }
  if (seated != static_cast<size_t>(setup.size) || ranks_of_node.size() < 2 || largest < 2) {
    log::debug(setup.where,
               ": no hierarchical collectives, since the ranks are not numbered 0 up on each node, or no node holds "
               "two (",
               ranks_of_node.size(), " nodes)");
    return nullptr;
  }
  // Nodes alike: each local rank's peers carry their share between the nodes. Nodes of
  // different sizes: their local rank 0, the leaders, carry everything.
  std::vector<Place> places(static_cast<size_t>(setup.size));
  std::vector<int> rank_at, cross;
  int node_index = 0, my_index = -1;
  for (const auto& [node, ranks] : ranks_of_node) {
    if (node == setup.node_rank) my_index = node_index;
    cross.push_back(ranks[alike ? static_cast<size_t>(setup.local_rank) : 0]);
    for (size_t local = 0; local < ranks.size(); ++local) {
      places[static_cast<size_t>(ranks[local])] = Place{node_index, static_cast<int>(local)};
      rank_at.push_back(ranks[local]);
    }
    ++node_index;
  }
  std::vector<CpuShare> shares;
  for (const Seat& seat : seats) shares.push_back(seat.cpus);
  const bool core_per_rank = every_rank_has_a_cpu(shares);
  const int local_size = static_cast<int>(ranks_of_node[setup.node_rank].size());
  const int cross_rank = alike || setup.local_rank == 0 ? my_index : -1;
  auto node = transport::shm::Group::create(*setup.store, concat(setup.prefix, "shm/node", setup.node_rank, "/"),
                                            setup.local_rank, local_size, deadline);
  return std::unique_ptr<Hierarchy>(
      new Hierarchy(whole, std::move(node), SubsetTransport(whole, std::move(cross), cross_rank), alike, core_per_rank,
                    my_index, setup.local_rank, local_size, std::move(places), std::move(rank_at)));
}

void Hierarchy::all_reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                           const OpContext& context) {
  if (count == 0) return;
  if (!alike_) return all_reduce_through_leaders(send, recv, count, dtype, op, context);
  const size_t element = dtype_size(dtype);
  const size_t local_size = static_cast<size_t>(local_size_);
  const size_t slice = (count + local_size - 1) / local_size;
  const size_t padded = slice * local_size;
  Scratch& scratch = *context.scratch;
  // Scratch slots 2 and 3: the inter-node all_reduce takes 0 and 1.
  const void* input = send;
  void* output = recv;
  if (padded != count) {
    char* staged = static_cast<char*>(scratch.get(2, padded * element));
    std::memcpy(staged, send, count * element);
    std::memset(staged + count * element, 0, (padded - count) * element);
    input = staged;
    output = staged;
  }
  void* mine = scratch.get(3, slice * element);
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  node_->reduce_scatter(input, mine, slice, dtype, combine, context);
  Exchange cross(cross_, context);
  all_reduce_across(cross, mine, slice, dtype, combine);
  finish_average(mine, slice, dtype, op, world_size());
  node_->all_gather(mine, output, slice * element, context);
  if (output != recv) std::memcpy(recv, output, count * element);
}

void Hierarchy::all_gather(const void* send, void* recv, size_t bytes, const OpContext& context) {
  if (bytes == 0) return;
  const size_t nodes = static_cast<size_t>(cross_.size());
  const size_t local_size = static_cast<size_t>(local_size_);
  Scratch& scratch = *context.scratch;
  // Between nodes, the blocks of this local rank's peers, by node.
  char* across = static_cast<char*>(scratch.get(2, nodes * bytes));
  Exchange cross(cross_, context);
  run_all_gather(flat_choice(Kind::kAllGather, bytes, cross.size()), cross, send, across, bytes);
  char* out = static_cast<char*>(recv);
  if (works_in_place(bytes)) {
    // Node n's blocks are recv's n-th run of L: this rank's goes to its place in each,
    // then the node fills each run in place.
    const size_t local = static_cast<size_t>(local_rank_);
    for (size_t node = 0; node < nodes; ++node) {
      std::memcpy(out + (node * local_size + local) * bytes, across + node * bytes, bytes);
    }
    for (size_t node = 0; node < nodes; ++node) {
      char* run = out + node * local_size * bytes;
      node_->all_gather(run + local * bytes, run, bytes, context);
    }
    return;
  }
  // Within the node, every local rank's row of them: [local rank][node].
  char* grid = static_cast<char*>(scratch.get(3, local_size * nodes * bytes));
  node_->all_gather(across, grid, nodes * bytes, context);
  for (size_t local = 0; local < local_size; ++local) {
    for (size_t node = 0; node < nodes; ++node) {
      std::memcpy(out + static_cast<size_t>(rank_of(node, local)) * bytes, grid + (local * nodes + node) * bytes,
                  bytes);
    }
  }
}

void Hierarchy::reduce_scatter(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                               const OpContext& context) {
  if (count == 0) return;
  const size_t bytes = count * dtype_size(dtype);
  const size_t nodes = static_cast<size_t>(cross_.size());
  const size_t local_size = static_cast<size_t>(local_size_);
  Scratch& scratch = *context.scratch;
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  // The node's sums of this local rank's peers' blocks, one per node.
  char* partial = static_cast<char*>(scratch.get(3, nodes * bytes));
  const char* input = static_cast<const char*>(send);
  if (works_in_place(bytes)) {
    // Node n's blocks are the input's n-th run of L, in local-rank order.
    for (size_t node = 0; node < nodes; ++node) {
      node_->reduce_scatter(input + node * local_size * bytes, partial + node * bytes, count, dtype, combine, context);
    }
  } else {
    // The blocks in [local rank][node] order, so that the node's reduce-scatter leaves
    // each local rank the node's sums for its peers on every node.
    char* grid = static_cast<char*>(scratch.get(2, local_size * nodes * bytes));
    for (size_t local = 0; local < local_size; ++local) {
      for (size_t node = 0; node < nodes; ++node) {
        std::memcpy(grid + (local * nodes + node) * bytes, input + static_cast<size_t>(rank_of(node, local)) * bytes,
                    bytes);
      }
    }
    node_->reduce_scatter(grid, partial, nodes * count, dtype, combine, context);
  }
  Exchange cross(cross_, context);
  run_reduce_scatter(flat_choice(Kind::kReduceScatter, bytes, cross.size()), cross, partial, recv, count, dtype,
                     combine);
  finish_average(recv, count, dtype, op, world_size());
}

void Hierarchy::broadcast(void* buffer, size_t bytes, int root, const OpContext& context) {
  if (bytes == 0) return;
  if (!alike_) return broadcast_through_leaders(buffer, bytes, root, context);
  const Place from = places_[static_cast<size_t>(root)];
  // Between nodes among the root's local rank, one per node; then within each node.
  if (local_rank_ == from.local_rank) {
    Exchange cross(cross_, context);
    broadcast_binomial(cross, buffer, bytes, from.node);
  }
  node_->broadcast(buffer, bytes, from.local_rank, context);
}

void Hierarchy::reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                       const OpContext& context) {
  if (count == 0) return;
  // Within each node to its gatherer, then among the gatherers, one per node, to the
  // root. The gatherer is the root's local rank where the nodes are alike (cross_
  // links those), else each node's leader, but the root itself on its node.
  const Place from = places_[static_cast<size_t>(root)];
  const bool roots_node = node_index_ == from.node;
  const int gatherer = alike_ || roots_node ? from.local_rank : 0;
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  if (local_rank_ != gatherer) {
    node_->reduce(send, nullptr, count, dtype, combine, gatherer, context);
    return;
  }
  // This node's sum: into recv on the root itself, else into scratch (slot 2; the
  // reduce between nodes takes 0 and 1).
  const size_t bytes = count * dtype_size(dtype);
  void* sum = roots_node ? recv : context.scratch->get(2, bytes);
  node_->reduce(send, sum, count, dtype, combine, gatherer, context);
  std::optional<SubsetTransport> gatherers;
  if (!alike_) {
    std::vector<int> members;
    for (int node = 0; node < cross_.size(); ++node) {
      members.push_back(node == from.node ? root : cross_.communicator_rank(node));
    }
    gatherers.emplace(whole_, std::move(members), node_index_);
  }
  Exchange cross(gatherers ? *gatherers : cross_, context);
  if (bytes <= kSmallMessageBytes) {
    reduce_binomial(cross, sum, roots_node ? recv : nullptr, count, dtype, combine, from.node);
  } else {
    reduce_ring(cross, sum, roots_node ? recv : nullptr, count, dtype, combine, from.node);
  }
  if (roots_node) finish_average(recv, count, dtype, op, world_size());
}

void Hierarchy::gather(const void* send, void* recv, size_t bytes, int root, const OpContext& context) {
  if (bytes == 0) return;
  const Place from = places_[static_cast<size_t>(root)];
  if (local_rank_ != from.local_rank) {
    node_->gather(send, nullptr, bytes, from.local_rank, context);
    return;
  }
  // This node's L blocks, then the K nodes' runs of them at the root: [node][local
  // rank], which is recv's own order where the ranks are numbered node by node.
  const size_t nodes = static_cast<size_t>(cross_.size());
  const size_t run = static_cast<size_t>(local_size_) * bytes;
  const bool is_root = cross_.rank() == from.node;
  const bool in_recv = is_root && numbered_by_node_;
  char* grid = nullptr;
  if (is_root) grid = in_recv ? static_cast<char*>(recv) : static_cast<char*>(context.scratch->get(3, nodes * run));
  char* mine = is_root ? grid + static_cast<size_t>(from.node) * run : static_cast<char*>(context.scratch->get(2, run));
  node_->gather(send, mine, bytes, from.local_rank, context);
  Exchange cross(cross_, context);
  if (run <= kSmallMessageBytes) {
    gather_binomial(cross, mine, grid, run, from.node);
  } else {
    gather_linear(cross, mine, grid, run, from.node);
  }
  if (is_root && !in_recv) to_rank_order(grid, static_cast<char*>(recv), bytes);
}

void Hierarchy::scatter(const void* send, void* recv, size_t bytes, int root, const OpContext& context) {
  if (bytes == 0) return;
  const Place from = places_[static_cast<size_t>(root)];
  if (local_rank_ != from.local_rank) {
    node_->scatter(nullptr, recv, bytes, from.local_rank, context);
    return;
  }
  // The root's blocks as K runs of L, [node][local rank]: send itself where the ranks
  // are numbered node by node, else a reordered copy.
  const size_t nodes = static_cast<size_t>(cross_.size());
  const size_t run = static_cast<size_t>(local_size_) * bytes;
  const bool is_root = cross_.rank() == from.node;
  const char* grid = nullptr;
  if (is_root && numbered_by_node_) {
    grid = static_cast<const char*>(send);
  } else if (is_root) {
    char* reordered = static_cast<char*>(context.scratch->get(3, nodes * run));
    to_node_order(static_cast<const char*>(send), reordered, bytes);
    grid = reordered;
  }
  // This node's run: in place in grid on the root (the in-place form, which the
  // scatter between nodes never writes), else in scratch.
  char* mine = is_root ? const_cast<char*>(grid) + static_cast<size_t>(from.node) * run
                       : static_cast<char*>(context.scratch->get(2, run));
  Exchange cross(cross_, context);
  if (run <= kSmallMessageBytes) {
    scatter_binomial(cross, grid, mine, run, from.node);
  } else {
    scatter_linear(cross, grid, mine, run, from.node);
  }
  node_->scatter(mine, recv, bytes, from.local_rank, context);
}

void Hierarchy::all_to_all(const void* send, void* recv, size_t bytes, const OpContext& context) {
  if (bytes == 0) return;
  // Scratch slots 0, 1 and 3: the engine stages an in-place call's send in slot 2, and
  // the all_to_alls between nodes take none.
  const size_t nodes = static_cast<size_t>(cross_.size());
  const size_t local_size = static_cast<size_t>(local_size_);
  const size_t whole = nodes * local_size * bytes;
  Scratch& scratch = *context.scratch;
  const char* in = static_cast<const char*>(send);
  // For each local rank l, the blocks for local rank l of every node, by node.
  char* by_local = static_cast<char*>(scratch.get(0, whole));
  for (size_t l = 0; l < local_size; ++l) {
    for (size_t node = 0; node < nodes; ++node) {
      std::memcpy(by_local + (l * nodes + node) * bytes, in + static_cast<size_t>(rank_of(node, l)) * bytes, bytes);
    }
  }
  // Within the node: from each local peer, its blocks for this local rank of every
  // node, [peer][node].
  char* for_me = static_cast<char*>(scratch.get(1, whole));
  node_->all_to_all(by_local, for_me, nodes * bytes, context);
  // Between nodes among this local rank's peers: to each node, the blocks its rank
  // gets from this node's ranks, [node][local peer]; what arrives is, by node, the
  // blocks of that node's ranks for this rank, [node][local rank]: recv's own order
  // where the ranks are numbered node by node.
  char* by_node = static_cast<char*>(scratch.get(3, whole));
  for (size_t node = 0; node < nodes; ++node) {
    for (size_t peer = 0; peer < local_size; ++peer) {
      std::memcpy(by_node + (node * local_size + peer) * bytes, for_me + (peer * nodes + node) * bytes, bytes);
    }
  }
  char* out = numbered_by_node_ ? static_cast<char*>(recv) : for_me;
  Exchange cross(cross_, context);
  if (local_size * bytes <= kSmallMessageBytes) {
    all_to_all_linear(cross, by_node, out, local_size * bytes);
  } else {
    all_to_all_pairwise(cross, by_node, out, local_size * bytes);
  }
  if (!numbered_by_node_) to_rank_order(out, static_cast<char*>(recv), bytes);
}

bool Hierarchy::works_in_place(size_t block_bytes) const {
  return numbered_by_node_ && block_bytes * static_cast<size_t>(world_size()) > kReorderedUpToBytes;
}

void Hierarchy::to_rank_order(const char* by_node, char* ranked, size_t bytes) const {
  for (size_t i = 0; i < rank_at_.size(); ++i) {
    std::memcpy(ranked + static_cast<size_t>(rank_at_[i]) * bytes, by_node + i * bytes, bytes);
  }
}

void Hierarchy::to_node_order(const char* ranked, char* by_node, size_t bytes) const {
  for (size_t i = 0; i < rank_at_.size(); ++i) {
    std::memcpy(by_node + i * bytes, ranked + static_cast<size_t>(rank_at_[i]) * bytes, bytes);
  }
}

void Hierarchy::all_reduce_through_leaders(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                                           const OpContext& context) {
  // The node's sum on its leader, the leaders' all_reduce, then the node's broadcast
  // of it: the leader divides an average once, so that every rank gets its bits.
  const size_t bytes = count * dtype_size(dtype);
  const ReduceOp combine = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  const bool leads = local_rank_ == 0;
  node_->reduce(send, leads ? recv : nullptr, count, dtype, combine, 0, context);
  if (leads) {
    Exchange cross(cross_, context);
    all_reduce_across(cross, recv, count, dtype, combine);
    finish_average(recv, count, dtype, op, world_size());
  }
  node_->broadcast(recv, bytes, 0, context);
}

void Hierarchy::broadcast_through_leaders(void* buffer, size_t bytes, int root, const OpContext& context) {
  // Within the root's node first, which gives its leader the data; then among the
  // leaders; then within each other node from its leader.
  const Place from = places_[static_cast<size_t>(root)];
  const bool roots_node = node_index_ == from.node;
  if (roots_node) node_->broadcast(buffer, bytes, from.local_rank, context);
  if (local_rank_ == 0) {
    Exchange cross(cross_, context);
    broadcast_binomial(cross, buffer, bytes, from.node);
  }
  if (!roots_node) node_->broadcast(buffer, bytes, 0, context);
}

void Hierarchy::barrier(const OpContext& context) {
  // Every rank of a node has come once the first returns on local rank 0; every node
  // has, once its exchange with the other nodes' local rank 0 does; and no rank leaves
  // the second before local rank 0 has seen that.
  node_->barrier(context);
  if (local_rank_ == 0) {
    Exchange cross(cross_, context);
    barrier_dissemination(cross);
  }
  node_->barrier(context);
}

}  // namespace tutti::collectives
