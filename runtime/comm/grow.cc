// Comm::grow and Comm::join: a running job admits new processes (as ncclCommGrow, and
// MPI's spawn without the spawning). Every rank of the communicator says how many it
// wants; rank 0 checks that they agree, admits that many joiners through the store
// (rendezvous/admission.h) and publishes the verdict; then the ranks, keeping their
// numbers, and the joiners, numbered from the old size in the order they came, meet
// as a new communicator under keys of their own. The old communicator is untouched:
// a grow that fails (a joiner that never comes, a rank that does not call it or is
// lost) fails on every rank and every joiner it seated, with rank 0's reason, and
// leaves the old one usable.
//
// The new ranks take the next numbers rather than those of ranks that were lost: a
// shrink has already numbered the survivors 0..n-1, so there are no holes to fill, and
// every survivor keeps its rank (its data, its shard, its place in a ring) across the
// shrink and the grow alike.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/common/log.h"
#include "runtime/rendezvous/admission.h"
#include "runtime/store/loss_event.h"
#include "runtime/trace/trace.h"

namespace tutti::comm {
namespace {

constexpr const char* kGrow = "tutti_comm_grow";
constexpr const char* kJoin = "tutti_comm_join";
// More than any job has processes (tutti launch starts 4,096 at most).
constexpr int kMaxGrow = 1 << 20;
// Rank 0 publishes the verdict as its own deadline passes; the others wait a little
// longer for it, so that they report its reason rather than a timeout of their own.
constexpr int64_t kVerdictGraceMs = 3000;

std::string arrived_key(const std::string& prefix, int rank) { return concat(prefix, "in/", rank); }
// What a rank whose communicator is already unusable (it learnt of a loss first) says
// in place of its count, with why: the grow fails for every rank at once, rather than
// rank 0 waiting for it, or it for rank 0's verdict, until the timeout.
constexpr const char* kUnusable = "unusable ";
std::string verdict_key(const std::string& prefix) { return prefix + "verdict"; }

// What rank 0 says of a grow: "ok", or the failure's status and message.
std::string failed_verdict(Status status, const std::string& why) { return concat(static_cast<int>(status), " ", why); }

// A joiner's seat: "<rank> <size> <grow's prefix> <rank 0's loss key> <name>"; the
// name last, as it may hold spaces. Keys never do.
struct Seat {
  int rank = -1;
  int size = 0;
  std::string prefix;
  std::string leader_lost_key;
  std::string name;
};

std::string encode(const Seat& seat) {
  return concat(seat.rank, " ", seat.size, " ", seat.prefix, " ", seat.leader_lost_key, " ", seat.name);
}

Seat decode_seat(const std::string& text) {
  Seat seat;
  char prefix[512], lost[512];
  int name_at = -1;
  if (sscanf(text.c_str(), "%d %d %511s %511s %n", &seat.rank, &seat.size, prefix, lost, &name_at) != 4 ||
      name_at < 0) {
    fail(Status::kInternal, concat(kJoin, ": the store holds a malformed seat \"", text, "\"; please report this"));
  }
  seat.prefix = prefix;
  seat.leader_lost_key = lost;
  seat.name = text.substr(static_cast<size_t>(name_at));
  return seat;
}

// Waits for rank 0's verdict on the grow under prefix, and throws its failure, each
// message starting with api and where. Rank 0 lost before it gave one is kPeerLost.
void await_verdict(store::Client& store, const std::string& prefix, const std::string& leader_lost_key,
                   Deadline deadline, const char* api, const std::string& where) {
  size_t ended = 0;
  try {
    ended = store.wait_any({verdict_key(prefix), leader_lost_key}, deadline);
  } catch (const Error& error) {
    if (error.status() != Status::kTimeout) throw;
    fail(Status::kTimeout, concat(api, ": timed out on ", where, " waiting for rank 0 to admit the joiners (",
                                  error.what(), "); rank 0 must call tutti_comm_grow too"));
  }
  if (ended == 1 && !store.check({verdict_key(prefix)}, deadline).at(0)) {
    fail(Status::kPeerLost,
         concat(api, ": rank 0, which admits the joiners, was lost during the grow, seen from ", where));
  }
  const std::string verdict = store.get(verdict_key(prefix), deadline);
  if (verdict == "ok") return;
  int status = 0, message_at = -1;
  if (sscanf(verdict.c_str(), "%d %n", &status, &message_at) != 1 || message_at < 0) {
    fail(Status::kInternal, concat(api, ": the store holds a malformed verdict \"", verdict, "\"; please report this"));
  }
  fail(static_cast<Status>(status),
       concat(api, ": the grow failed, seen from ", where, ": ", verdict.substr(message_at)));
}

}  // namespace

void Comm::lead_grow(store::Client& store, const std::string& prefix, int count, const std::string& grown_name,
                     Deadline deadline) {
  std::string verdict = "ok";
  try {
    std::vector<bool> alive;
    try {
      alive = rendezvous::wait_present_or_lost(store, prefix, "in", prefix_, size(), deadline);
    } catch (const Error& error) {
      if (error.status() != Status::kTimeout) throw;
      fail(Status::kTimeout, concat("ranks ", error.what(), " of ", describe(), " never called ", kGrow, " (within ",
                                    op_timeout_ms_, " ms); every rank must call it, with the same count"));
    }
    std::string lost;
    std::vector<std::string> keys;
    for (int rank = 0; rank < size(); ++rank) {
      if (!alive[rank]) lost += concat(lost.empty() ? "" : ", ", rank);
      keys.push_back(arrived_key(prefix, rank));
    }
    if (!lost.empty()) {
      fail(Status::kPeerLost, concat("ranks ", lost, " of ", describe(), " were lost during the grow; ",
                                     "shrink the communicator first, then grow the survivors"));
    }
    const std::vector<std::string> counts = store.multi_get(keys, deadline);
    for (int rank = 0; rank < size(); ++rank) {
      if (counts[rank].rfind(kUnusable, 0) == 0) {
        fail(Status::kPeerLost, concat("rank ", rank, " of ", describe(),
                                       " could not take part: ", counts[rank].substr(std::strlen(kUnusable))));
      }
    }
    for (int rank = 0; rank < size(); ++rank) {
      if (std::atoi(counts[rank].c_str()) != count) {
        fail(Status::kMismatch, concat("rank ", rank, " of ", describe(), " asked to grow by ", counts[rank],
                                       " and rank 0 by ", count, "; every rank must pass the same count"));
      }
    }
    std::vector<std::string> seats;
    for (int i = 0; i < count; ++i) {
      seats.push_back(encode(Seat{size() + i, size() + count, prefix, store::lost_rank_key(prefix_, 0), grown_name}));
    }
    std::vector<std::string> joiners;
    try {
      joiners = rendezvous::admit_joiners(store, seats, deadline);
    } catch (const Error& error) {
      if (error.status() != Status::kTimeout) throw;
      fail(Status::kTimeout,
           concat("timed out after ", op_timeout_ms_, " ms waiting for the joiners: ", error.what(),
                  "; start them (tutti_comm_join, or tutti launch --restart), or raise op_timeout_ms"));
    }
    std::string who;
    for (size_t i = 0; i < joiners.size(); ++i) who += concat(i == 0 ? "" : ", ", joiners[i], " as rank ", size() + i);
    log::info(describe(), " admitted ", who);
  } catch (const Error& error) {
    verdict = failed_verdict(error.status(), error.what());
  }
  store.set(verdict_key(prefix), verdict, Deadline::after_ms(kVerdictGraceMs));
}

std::unique_ptr<Comm> Comm::grow(int count) {
  return trace::span("grow", trace::kControlTrack, [&] { return grow_now(count); });
}

std::unique_ptr<Comm> Comm::grow_now(int count) {
  if (count < 1 || count > kMaxGrow) {
    fail(Status::kInvalidArgument, concat(kGrow, ": count ", count, " on ", describe(),
                                          " is out of range; pass how many ranks to add, 1 to ", kMaxGrow));
  }
  const uint64_t number = grows_++;
  const std::string prefix = concat(prefix_, "grow.", number, "/");
  try {
    check_usable(kGrow);
  } catch (const Error& error) {
    withdraw_from_grow(prefix, error);
    throw;
  }
  const std::string grown_name = concat(name_, ".grow", number);
  auto deadline = Deadline::after_ms(op_timeout_ms_);
  // A connection of its own, as a split's: aborting one communicator fails only its calls.
  auto store = store::Client::connect(loop_, store_host_, store_port_, deadline, store_secret_);
  store->set(arrived_key(prefix, rank()), std::to_string(count), deadline);
  if (rank() == 0) lead_grow(*store, prefix, count, grown_name, deadline);
  await_verdict(*store, prefix, store::lost_rank_key(prefix_, 0), Deadline::after_ms(op_timeout_ms_ + kVerdictGraceMs),
                kGrow, describe());
  return make_member(std::move(store), prefix + "comm/", grown_name, concat("grow #", number, " of ", describe()),
                     rank(), size() + count, Deadline::after_ms(op_timeout_ms_), kGrow);
}

// This rank's communicator learnt of a failure before its grow began, and some other
// rank's may not have: it says so in place of its count (rank 0 then fails the grow
// naming it) or, being rank 0, gives the failed verdict itself, so that nobody waits
// for it. Best effort: a store that cannot be reached has failed the others too.
void Comm::withdraw_from_grow(const std::string& prefix, const Error& error) {
  try {
    auto deadline = Deadline::after_ms(kVerdictGraceMs);
    auto store = store::Client::connect(loop_, store_host_, store_port_, deadline, store_secret_);
    store->set(arrived_key(prefix, rank()), concat(kUnusable, error.what()), deadline);
    if (rank() == 0) store->set(verdict_key(prefix), failed_verdict(error.status(), error.what()), deadline);
  } catch (const Error&) {
  }
}

std::unique_ptr<Comm> Comm::join(const Options& options) {
  rendezvous::Plan plan = rendezvous::make_join_plan(options.request.init_method, rendezvous::process_environment());
  log::set_identity("joiner");
  auto deadline = Deadline::after_ms(options.init_timeout_ms);
  std::unique_ptr<Comm> comm = reach_store(options, plan, deadline, nullptr, kJoin);

  const Seat seat = decode_seat(rendezvous::await_seat(*comm->store_, process_identity(), deadline, kJoin));
  const std::string where =
      concat("joiner ", process_identity(), " (seated as rank ", seat.rank, " of ", seat.size, ")");
  await_verdict(*comm->store_, seat.prefix, seat.leader_lost_key,
                Deadline::after_ms(options.op_timeout_ms + kVerdictGraceMs), kJoin, where);

  log::set_identity(concat("rank ", seat.rank, "/", seat.size));
  trace::start(seat.rank, process_identity(), options.trace_folder);
  comm->prefix_ = seat.prefix + "comm/";
  comm->name_ = seat.name;
  plan.init_method = concat("join through ", plan.init_method);
  plan.rank = seat.rank;
  plan.world_size = seat.size;
  comm->meet_and_start(plan, Deadline::after_ms(options.op_timeout_ms), kJoin);
  log::info("joined ", comm->describe(), " through ", plan.init_method, " (launcher: ", plan.launcher, ")");
  return comm;
}

}  // namespace tutti::comm
