// Comm::split: MPI_Comm_split through the store. Every rank writes its (color, key);
// rank 0 reads them all, orders each color's ranks by (key, old rank) and writes each
// rank its new rank and size; the ranks of each color then meet as a new communicator
// under keys of their own. A handful of requests per rank, rank 0's included.
#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/store/bulk_set.h"
#include "runtime/trace/trace.h"

namespace tutti::comm {
namespace {

std::string rank_key(const std::string& prefix, const char* what, int rank) { return concat(prefix, what, "/", rank); }

}  // namespace

void Comm::publish_split(const std::string& prefix, Deadline deadline) {
  std::vector<std::string> keys;
  keys.reserve(size());
  for (int rank = 0; rank < size(); ++rank) keys.push_back(rank_key(prefix, "entry", rank));
  std::vector<std::string> entries = store_->multi_get(keys, deadline);
  // color -> (key, old rank), sorted to give the new ranks.
  std::map<int, std::vector<std::pair<int, int>>> groups;
  std::vector<int> color_of(size());
  for (int rank = 0; rank < size(); ++rank) {
    int color = 0, key = 0;
    if (sscanf(entries[rank].c_str(), "%d %d", &color, &key) != 2) {
      fail(Status::kInternal, concat("tutti_comm_split: malformed entry \"", entries[rank], "\" from rank ", rank,
                                     " on ", describe(), "; please report this"));
    }
    color_of[rank] = color;
    if (color >= 0) groups[color].emplace_back(key, rank);
  }
  std::vector<std::string> results(size(), "-1 -1 -1");
  for (auto& [color, members] : groups) {
    std::sort(members.begin(), members.end());
    for (size_t new_rank = 0; new_rank < members.size(); ++new_rank) {
      results[members[new_rank].second] = concat(color, " ", new_rank, " ", members.size());
    }
  }
  std::vector<std::string> result_keys;
  result_keys.reserve(size());
  for (int rank = 0; rank < size(); ++rank) result_keys.push_back(rank_key(prefix, "result", rank));
  store::set_each(*store_, result_keys, results, deadline);
}

std::unique_ptr<Comm> Comm::split(int color, int key) {
  return trace::span("split", trace::kControlTrack, [&] { return split_now(color, key); });
}

std::unique_ptr<Comm> Comm::split_now(int color, int key) {
  check_usable("tutti_comm_split");
  if (color < -1) {
    fail(Status::kInvalidArgument, concat("tutti_comm_split: color ", color, " on ", describe(),
                                          " is negative; use a color >= 0, or TUTTI_UNDEFINED (-1) to join none"));
  }
  uint64_t number = splits_++;
  std::string prefix = concat(prefix_, "split.", number, "/");
  auto deadline = Deadline::after_ms(op_timeout_ms_);
  std::string result;
  rendezvous::enter(*store_, prefix, deadline);
  try {
    store_->set(rank_key(prefix, "entry", rank()), concat(color, " ", key), deadline);
    if (rank() == 0) publish_split(prefix, deadline);
    result = store_->get(rank_key(prefix, "result", rank()), deadline);
  } catch (const Error& error) {
    if (error.status() != Status::kTimeout) {
      rendezvous::depart_after_failure(*store_, prefix, hosted_ != nullptr);
      throw;
    }
    std::string missing =
        rendezvous::shared_absent_ranks(*store_, prefix, "entry", "timeout", size(), Deadline::after_ms(2000));
    rendezvous::depart_after_failure(*store_, prefix, hosted_ != nullptr);
    fail(Status::kTimeout,
         concat("tutti_comm_split: timed out after ", op_timeout_ms_, " ms on ", describe(), " (split #", number,
                "): ranks ", missing.empty() ? "?" : missing,
                " never called it; check that every rank calls tutti_comm_split in the same order, or raise "
                "op_timeout_ms"));
  }
  int new_color = 0, new_rank = 0, new_size = 0;
  if (sscanf(result.c_str(), "%d %d %d", &new_color, &new_rank, &new_size) != 3) {
    fail(Status::kInternal,
         concat("tutti_comm_split: malformed result \"", result, "\" on ", describe(), "; please report this"));
  }
  // Every rank of a communicator with an NCCL communicator splits that too
  // (ncclCommSplit), those that join no new communicator included.
  auto inherited = device_ ? device_->split(color, key, deadline) : nullptr;
  if (color < 0) return nullptr;
  // A connection of its own, so that aborting one communicator fails only its own calls.
  auto store = store::Client::connect(loop_, store_host_, store_port_, deadline, store_secret_);
  auto sub = make_member(
      std::move(store), concat(prefix, "color.", color, "/"), concat(name_, ".split", number, ".color", color),
      concat("split #", number, " of ", describe()), new_rank, new_size, deadline, "tutti_comm_split");
  if (inherited) sub->device_ = device::open_device_path(sub->device_setup(), false, std::move(inherited));
  return sub;
}

std::unique_ptr<Comm> Comm::make_member(std::unique_ptr<store::Client> store, const std::string& prefix,
                                        const std::string& name, const std::string& how, int new_rank, int new_size,
                                        Deadline deadline, const char* api) {
  std::unique_ptr<Comm> sub(new Comm());
  sub->loop_ = loop_;
  sub->hosted_ = hosted_;
  sub->store_host_ = store_host_;
  sub->store_port_ = store_port_;
  sub->store_owner_ = store_owner_;
  sub->store_secret_ = store_secret_;
  sub->prefix_ = prefix;
  sub->node_key_ = node_key_;
  sub->init_method_ = init_method_;
  sub->name_ = name;
  sub->init_timeout_ms_ = init_timeout_ms_;
  sub->op_timeout_ms_ = op_timeout_ms_;
  sub->store_ = std::move(store);

  rendezvous::Plan plan;
  plan.init_method = how;
  plan.rank = new_rank;
  plan.world_size = new_size;
  plan.node_key = node_key_;
  sub->meet_and_start(plan, deadline, api);
  return sub;
}

void Comm::meet_and_start(const rendezvous::Plan& plan, Deadline deadline, const char* api) {
  place_ = rendezvous::meet(*store_, prefix_, plan, process_identity(), deadline, api);
  joined_ = true;
  start_collectives(deadline);
}

}  // namespace tutti::comm
