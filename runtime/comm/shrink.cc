// Comm::shrink: MPIX_Comm_shrink through the store, whose loss events (health/) are
// the one view of who is gone that every survivor shares. Each survivor says it has
// arrived; the first to arrive becomes the leader (compare-and-set), waits until every
// rank has either arrived or been declared lost, and gives each rank its seat in the
// new communicator, a key per rank (one list that every survivor read would cost the
// store O(N^2) bytes); they then meet as a new communicator under keys of their own. A
// leader lost before it has seated everyone is replaced by the next attempt's. Runs on
// a connection of its own, so it works after tutti_comm_abort closed the
// communicator's.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/bulk_set.h"
#include "runtime/store/loss_event.h"
#include "runtime/trace/trace.h"

namespace tutti::comm {
namespace {

constexpr const char* kApi = "tutti_comm_shrink";

// Where each survivor says it has come, as wait_present_or_lost reads it.
std::string arrived_key(const std::string& prefix, int rank) { return concat(prefix, "in/", rank); }
// A rank's seat as the leader of attempt gives it: "<new rank> <new size>", the new
// rank -1 for a rank the store declared lost.
std::string seat_key(const std::string& prefix, int attempt, int rank) {
  return concat(prefix, "seat.", attempt, "/", rank);
}
// Set once the leader of attempt has given every rank its seat.
std::string seated_key(const std::string& prefix, int attempt) { return concat(prefix, "seated.", attempt); }

}  // namespace

void Comm::publish_survivors(store::Client& store, const std::string& prefix, int attempt, Deadline deadline) {
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
  const auto survivors = static_cast<int>(std::count(alive.begin(), alive.end(), true));
  std::vector<std::string> keys, seats;
  keys.reserve(size());
  seats.reserve(size());
  for (int rank = 0, next = 0; rank < size(); ++rank) {
    keys.push_back(seat_key(prefix, attempt, rank));
    seats.push_back(concat(alive[rank] ? next++ : -1, " ", survivors));
  }
  store::set_each(store, keys, seats, deadline);
  store.set(seated_key(prefix, attempt), "", deadline);
}

std::unique_ptr<Comm> Comm::shrink() {
  return trace::span("shrink", trace::kControlTrack, [&] { return shrink_now(); });
}

std::unique_ptr<Comm> Comm::shrink_now() {
  // Declared lost itself, or cut off from the store: there is nothing to shrink with
  // (a store that is gone would only be retried until the op timeout).
  if (monitor_ && monitor_->store_lost()) {
    fail(Status::kPeerLost,
         concat(kApi, ": ", describe(), " cannot shrink: ", fault_.why(), "; this process should exit"));
  }
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

  std::string seat;
  for (int attempt = 0;; ++attempt) {
    std::string leader = store->compare_set(concat(prefix, "leader.", attempt), "", std::to_string(rank()), deadline);
    int leader_rank = std::atoi(leader.c_str());
    if (leader_rank == rank()) publish_survivors(*store, prefix, attempt, deadline);
    size_t ended = 0;
    try {
      ended = store->wait_any({seated_key(prefix, attempt), store::lost_rank_key(prefix_, leader_rank)}, deadline);
    } catch (const Error& error) {
      if (error.status() != Status::kTimeout) throw;
      fail(Status::kTimeout,
           concat(kApi, ": timed out after ", op_timeout_ms_, " ms on ", describe(), " waiting for rank ", leader_rank,
                  " to publish the survivors; every rank still alive must call ", kApi));
    }
    if (ended == 0 || store->check({seated_key(prefix, attempt)}, deadline).at(0)) {
      seat = store->get(seat_key(prefix, attempt, rank()), deadline);
      break;
    }
    // The leader was lost before it had seated everyone: the next attempt elects another.
  }

  int new_rank = -1, new_size = 0;
  if (sscanf(seat.c_str(), "%d %d", &new_rank, &new_size) != 2) {
    fail(Status::kInternal,
         concat(kApi, ": the store holds a malformed seat \"", seat, "\" for ", describe(), "; please report this"));
  }
  if (new_rank < 0) refuse();
  return make_member(std::move(store), concat(prefix, "comm/"), concat(name_, ".shrink", number),
                     concat("shrink #", number, " of ", describe()), new_rank, new_size, deadline, kApi);
}

}  // namespace tutti::comm
