// Comm::shrink: MPIX_Comm_shrink through the store, whose loss events (health/) are
// the one view of who is gone that every survivor shares. Each survivor says it has
// arrived; the first to arrive becomes the leader (compare-and-set), waits until every
// rank has either arrived or been declared lost, and publishes the survivors; they
// then meet as a new communicator under keys of their own. A leader lost before it
// publishes is replaced by the next attempt's. Runs on a connection of its own, so
// it works after tutti_comm_abort closed the communicator's.
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/loss_event.h"

namespace tutti::comm {
namespace {

constexpr auto kLeaderPoll = std::chrono::milliseconds(10);
constexpr const char* kApi = "tutti_comm_shrink";

std::string arrived_key(const std::string& prefix, int rank) { return concat(prefix, "in/", rank); }

}  // namespace

void Comm::publish_survivors(store::Client& store, const std::string& prefix, const std::string& members_key,
                             Deadline deadline) {
  std::vector<std::string> keys;
  for (int rank = 0; rank < size(); ++rank) {
    keys.push_back(arrived_key(prefix, rank));
    keys.push_back(store::lost_rank_key(prefix_, rank));
  }
  while (true) {
    std::vector<bool> present = store.check(keys, deadline);
    std::string members;
    std::string missing;
    for (int rank = 0; rank < size(); ++rank) {
      bool arrived = present[2 * rank];
      bool lost = present[2 * rank + 1];
      if (arrived && !lost) members += concat(members.empty() ? "" : " ", rank);
      if (!arrived && !lost) missing += concat(missing.empty() ? "" : ", ", rank);
    }
    if (missing.empty()) {
      store.set(members_key, members, deadline);
      return;
    }
    if (deadline.expired()) {
      fail(Status::kTimeout,
           concat(kApi, ": timed out after ", op_timeout_ms_, " ms on ", describe(), ": ranks ", missing,
                  " neither called it nor were declared lost; every rank still alive must call ", kApi,
                  " (or raise op_timeout_ms)"));
    }
    std::this_thread::sleep_for(kLeaderPoll);
  }
}

std::unique_ptr<Comm> Comm::shrink() {
  uint64_t number = shrinks_++;
  std::string prefix = concat(prefix_, "shrink.", number, "/");
  auto deadline = Deadline::after_ms(op_timeout_ms_);
  auto store = store::Client::connect(loop_, store_host_, store_port_, deadline, store_secret_);
  auto declared_lost = [&]() -> bool { return store->check({store::lost_rank_key(prefix_, rank())}, deadline).at(0); };
  auto refuse = [&] {
    fail(Status::kPeerLost, concat(kApi, ": ", describe(), " was declared lost by the rendezvous store (",
                                   fault_.raised() ? fault_.why() : std::string("see the other ranks' errors"),
                                   "), so the survivors go on without it; this process should exit"));
  };
  if (declared_lost()) refuse();
  store->set(arrived_key(prefix, rank()), "", deadline);

  std::string members;
  for (int attempt = 0;; ++attempt) {
    std::string members_key = concat(prefix, "members.", attempt);
    std::string leader = store->compare_set(concat(prefix, "leader.", attempt), "", std::to_string(rank()), deadline);
    int leader_rank = std::atoi(leader.c_str());
    if (leader_rank == rank()) publish_survivors(*store, prefix, members_key, deadline);
    try {
      store->wait_any({members_key, store::lost_rank_key(prefix_, leader_rank)}, deadline);
    } catch (const Error& error) {
      if (error.status() != Status::kTimeout) throw;
      fail(Status::kTimeout, concat(kApi, ": timed out after ", op_timeout_ms_, " ms on ", describe(),
                                    " waiting for rank ", leader_rank,
                                    " to publish the survivors; every rank still alive must call ", kApi));
    }
    if (store->check({members_key}, deadline).at(0)) {
      members = store->get(members_key, deadline);
      break;
    }
    // The leader was lost before it published: the next attempt elects another.
  }

  std::istringstream list(members);
  int new_rank = -1, new_size = 0;
  for (int member; list >> member; ++new_size) {
    if (member == rank()) new_rank = new_size;
  }
  if (new_rank < 0) refuse();
  return make_member(std::move(store), concat(prefix, "comm/"), concat(name_, ".shrink", number),
                     concat("shrink #", number, " of ", describe()), new_rank, new_size, deadline, kApi);
}

}  // namespace tutti::comm
