// Comm::shrink: MPIX_Comm_shrink through the store, whose loss events (health/) are
// the one view of who is gone that every survivor shares. Each survivor says it has
// arrived; the first to arrive becomes the leader (compare-and-set), waits until every
// rank has either arrived or been declared lost, and publishes the survivors; they
// then meet as a new communicator under keys of their own. A leader lost before it
// publishes is replaced by the next attempt's. Runs on a connection of its own, so
// it works after tutti_comm_abort closed the communicator's.
#include <cstdlib>
#include <sstream>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/loss_event.h"
#include "runtime/trace/trace.h"

namespace tutti::comm {
namespace {

constexpr const char* kApi = "tutti_comm_shrink";

// Where each survivor says it has come, as wait_present_or_lost reads it.
std::string arrived_key(const std::string& prefix, int rank) { return concat(prefix, "in/", rank); }

}  // namespace

void Comm::publish_survivors(store::Client& store, const std::string& prefix, const std::string& members_key,
                             Deadline deadline) {
  std::vector<bool> alive;
  try {
    alive = rendezvous::wait_present_or_lost(store, prefix, "in", prefix_, size(), deadline);
  } catch (const Error& error) {
    if (error.status() != Status::kTimeout) throw;
    fail(Status::kTimeout,
         concat(kApi, ": timed out after ", op_timeout_ms_, " ms on ", describe(), ": ranks ", error.what(),
                " neither called it nor were declared lost; every rank still alive must call ", kApi,
                " (or raise op_timeout_ms)"));
  }
  std::string members;
  for (int rank = 0; rank < size(); ++rank) {
    if (alive[rank]) members += concat(members.empty() ? "" : " ", rank);
  }
  store.set(members_key, members, deadline);
}

std::unique_ptr<Comm> Comm::shrink() {
  return trace::span("shrink", trace::kControlTrack, [&] { return shrink_now(); });
}

std::unique_ptr<Comm> Comm::shrink_now() {
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
      fail(Status::kTimeout,
           concat(kApi, ": timed out after ", op_timeout_ms_, " ms on ", describe(), " waiting for rank ", leader_rank,
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
