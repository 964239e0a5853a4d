#include "runtime/rendezvous/meeting.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <thread>

#include "runtime/common/concat.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/common/settings.h"
#include "runtime/common/wall_clock.h"
#include "runtime/store/bulk_set.h"
#include "runtime/store/loss_event.h"
#include "runtime/store/server.h"

namespace tutti::rendezvous {
namespace {

// Short waits for reading what went wrong, once the real wait has already failed.
constexpr int64_t kDiagnosisMs = 2000;
// Up to this many ranks, a rank that could not read the shared list of absent ranks
// reads the N keys itself; past it, N ranks doing so at once would cost the store N^2
// (100,000 ranks: 2 MB each), and it names none.
constexpr int kOwnDiagnosisRanks = 1024;
// How long the process serving the store keeps it up for the others after a failure.
constexpr int64_t kLingerMs = 3000;
// How often wait_present_or_lost looks again.
constexpr int64_t kPresentPollMs = 10;
// How long the store's host waits for the others to leave before it says so.
constexpr int64_t kLeaveQuietMs = 2000;
// How often rank 0 looks for a denial while it waits for the others, and how long no
// rank must then have arrived before it ends the meeting (DenialWatch).
constexpr int64_t kDenialPollMs = 1000;
constexpr int64_t kDenialStallMs = 5000;

std::string key(const std::string& prefix, const std::string& what, int rank) {
  return concat(prefix, what, "/", rank);
}

// Tells every rank of the meeting why it cannot complete, then fails this one.
[[noreturn]] void abort_meeting(store::Client& store, const std::string& prefix, Status status,
                                const std::string& message, Deadline deadline) {
  try {
    store.set(prefix + "abort", concat(static_cast<int>(status), "\n", message), deadline);
  } catch (const Error&) {
    // The others then time out instead, naming the missing rank: still bounded.
  }
  fail(status, message);
}

[[noreturn]] void fail_from_abort_key(store::Client& store, const std::string& prefix, Deadline deadline) {
  std::string text = store.get(prefix + "abort", deadline);
  size_t newline = text.find('\n');
  int code = std::atoi(text.substr(0, newline).c_str());
  std::string message = newline == std::string::npos ? text : text.substr(newline + 1);
  fail(static_cast<Status>(code), concat(message, " (reported by another rank)"));
}

// From its claim on, the store watches this rank's connection: should the process end
// before every rank has arrived, the store writes a loss event (store/liveness.h) that
// ends the others' wait at once, naming it, where they would otherwise wait out their
// deadline for a rank that can never come. The watch's timeout only has to outlast
// the rest of init, in which a rank may wait silently on the store; the communicator's
// failure detector (health/monitor.h) takes the watch over with its own.
int64_t watch_timeout_ms(Deadline deadline) { return deadline.remaining_ms() + kLingerMs + kDiagnosisMs; }

// The ranks that absent_ranks listed ("2, 5", "0, 1, ... and 40 more") as a phrase,
// with how many of the world came: "rank 2 never arrived (2 of 3 came)".
std::string missing_ranks(const std::string& list, int world_size, const char* verb, const char* came) {
  int count = 1;
  for (size_t at = list.find(", "); at != std::string::npos; at = list.find(", ", at + 2)) ++count;
  if (size_t more = list.find(" and "); more != std::string::npos) count += std::atoi(list.c_str() + more + 5);
  return concat(count == 1 ? "rank " : "ranks ", list, " ", verb, " (", world_size - count, " of ", world_size, " ",
                came, ")");
}

// The ranks that had not arrived when the meeting failed or reported on `occasion`,
// listed once for all the ranks that ask (shared_absent_ranks).
std::string unarrived_ranks(store::Client& store, const std::string& prefix, const Plan& plan,
                            const std::string& occasion) {
  return shared_absent_ranks(store, prefix, "who", occasion, plan.world_size, Deadline::after_ms(kDiagnosisMs));
}

// A rank that had arrived was lost before all had: the meeting can never complete.
[[noreturn]] void fail_on_loss(store::Client& store, const std::string& prefix, const Plan& plan,
                               const std::string& where, Deadline deadline, const char* api) {
  std::string who = "a rank";
  std::string reason = "the store declared it lost";
  if (auto event = store::decode_loss_event(store.get(store::lost_key(prefix, 1), deadline))) {
    who = concat("rank ", event->rank, " (", event->identity, ")");
    reason = event->reason;
  }
  std::string missing = unarrived_ranks(store, prefix, plan, "lost");
  fail(Status::kPeerLost,
       concat(api, ": rank ", plan.rank, " gave up ", where, ": ", who, " arrived and was then lost: ", reason,
              missing.empty() ? std::string()
                              : concat("; ", missing_ranks(missing, plan.world_size, "had not arrived yet", "had")),
              "; see that rank's own output for why it ended"));
}

// The store's last denial of a connection (store::kDeniedKey): when, on the store's
// wall clock, and a clause for a message about ranks that have not arrived: "; the
// store denied the connection from 127.0.0.1:5012 4 s ago: it sent no credentials;
// ...". nullopt when there was none or the store cannot say.
struct Denial {
  int64_t at_ms = 0;
  std::string clause;
};
std::optional<Denial> last_denial(store::Client& store) {
  try {
    const auto deadline = Deadline::after_ms(kDiagnosisMs);
    if (!store.check({store::kDeniedKey}, deadline)[0]) return std::nullopt;
    std::string text = store.get(store::kDeniedKey, deadline);
    size_t newline = text.find('\n');
    Denial denial;
    denial.at_ms = std::atoll(text.substr(0, newline).c_str());
    denial.clause = concat("; the store denied the connection from ", text.substr(newline + 1), ", ",
                           duration_text(std::max<int64_t>(0, wall_clock_ms() - denial.at_ms)),
                           " ago: a rank started without the job's secret is denied so, and never arrives; give "
                           "every rank the same TUTTI_SECRET");
    return denial;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// last_denial's clause, "" when there was none.
std::string denial_clause(store::Client& store) {
  std::optional<Denial> denial = last_denial(store);
  return denial ? denial->clause : "";
}

// A rank started without the job's secret is denied by the store and can never
// arrive. Rank 0, when it serves the store for this init, looks each kDenialPollMs
// while it waits for the others; once the store has denied a connection and no rank
// has arrived for kDenialStallMs, it ends the meeting on every rank (kDenied), naming
// the ranks missing and the denial, instead of leaving them to wait out the init
// timeout. Not at the denial itself: anyone who can reach the store can be denied, and
// a stranger's connection must not fail a job whose ranks are still coming; a job that
// has stopped arriving with a denial pending has almost surely lost that rank. Not
// where tutti launch serves the store (it gives every rank the secret, so a denial is a
// stranger's), nor in a split (its ranks are all in already): there rank 0 serves none.
class DenialWatch {
 public:
  void check(store::Client& store, const std::string& prefix, const Plan& plan, const std::string& where,
             Deadline deadline, const char* api) {
    const int64_t now_ms = wall_clock_ms();
    int64_t arrived = -1;
    try {
      arrived = store.add(prefix + "arrived", 0, Deadline::after_ms(kDiagnosisMs));
    } catch (const Error&) {
      return;  // the real wait says what is wrong with the store
    }
    if (arrived != last_arrived_) {
      last_arrived_ = arrived;
      last_change_ms_ = now_ms;
    }
    if (now_ms - last_change_ms_ < kDenialStallMs) return;
    std::optional<Denial> denial = last_denial(store);
    if (!denial) return;
    std::string missing = unarrived_ranks(store, prefix, plan, "denied");
    abort_meeting(store, prefix, Status::kDenied,
                  concat(api, ": rank ", plan.rank, " gave up ", where, ": ",
                         missing.empty() ? std::string("some ranks never arrived")
                                         : missing_ranks(missing, plan.world_size, "never arrived", "came"),
                         ", and none has come for ", duration_text(now_ms - last_change_ms_), denial->clause),
                  deadline);
  }

 private:
  int64_t last_arrived_ = -1;
  int64_t last_change_ms_ = wall_clock_ms();
};

// A meeting that waits long says so, at growing intervals (TUTTI_WAIT_REPORT_MS, then
// doubling), naming the ranks that have not arrived: init may take its whole timeout,
// two minutes by default, and a silent one looks hung. In a world past
// kOwnDiagnosisRanks, only rank 0 names them: the others' reports would cost the store
// three requests from every rank at each report (900,000 at 100,000 ranks by the
// third) to print one list 100,000 times.
void report_arrival_wait(store::Client& store, const std::string& prefix, const Plan& plan, const std::string& where,
                         int64_t waited_ms, Deadline deadline, const char* api) {
  if (plan.world_size > kOwnDiagnosisRanks && plan.rank != 0) {
    log::warn(api, ": rank ", plan.rank, " has waited ", duration_text(waited_ms), " ", where,
              " for the last ranks to arrive (rank 0's report names them); it gives up in ",
              duration_text(deadline.remaining_ms()), " (TUTTI_INIT_TIMEOUT_MS)");
    return;
  }
  std::string missing = unarrived_ranks(store, prefix, plan, concat("report-", waited_ms));
  log::warn(api, ": rank ", plan.rank, " has waited ", duration_text(waited_ms), " ", where, " for ",
            missing.empty() ? std::string("the last ranks to arrive")
                            : missing_ranks(missing, plan.world_size, "to arrive", "came"),
            "; it gives up in ", duration_text(deadline.remaining_ms()), " (TUTTI_INIT_TIMEOUT_MS)",
            denial_clause(store));
}

// The store turned a connection away for want of room: the rank behind it can never
// arrive, so the meeting cannot complete.
[[noreturn]] void fail_on_refusal(store::Client& store, const std::string& prefix, const Plan& plan,
                                  const std::string& where, const std::string& refusal, const char* api) {
  std::string missing = unarrived_ranks(store, prefix, plan, "refused");
  fail(Status::kTransport,
       concat(api, ": rank ", plan.rank, " gave up ", where, ": the store turned away ", refusal,
              missing.empty() ? std::string()
                              : concat("; ", missing_ranks(missing, plan.world_size, "had not arrived", "had")),
              "; a rank that cannot connect can never arrive"));
}

// Rank 0 numbers the nodes in order of their lowest rank, tells every rank its place
// on its node, and returns its own. Every rank counts its arrival only after its claim
// stood, so the N "who" keys are all there.
std::string publish_places(store::Client& store, const std::string& prefix, int size, Deadline deadline) {
  std::vector<std::string> keys;
  keys.reserve(size);
  for (int rank = 0; rank < size; ++rank) keys.push_back(key(prefix, "who", rank));
  std::vector<std::string> who = store.multi_get(keys, deadline);
  std::map<std::string, int> node_of_key;
  std::vector<int> node_of_rank(size), local_rank(size);
  std::vector<int> node_sizes;
  for (int rank = 0; rank < size; ++rank) {
    std::string node_key = who[rank].substr(who[rank].find('\n') + 1);
    auto [it, added] = node_of_key.emplace(node_key, static_cast<int>(node_sizes.size()));
    if (added) node_sizes.push_back(0);
    node_of_rank[rank] = it->second;
    local_rank[rank] = node_sizes[it->second]++;
  }
  std::vector<std::string> place_keys, places;
  place_keys.reserve(size);
  places.reserve(size);
  for (int rank = 0; rank < size; ++rank) {
    place_keys.push_back(key(prefix, "place", rank));
    places.push_back(concat(local_rank[rank], " ", node_sizes[node_of_rank[rank]], " ", node_of_rank[rank]));
  }
  store::set_each(store, place_keys, places, deadline);
  return concat(local_rank[0], " ", node_sizes[node_of_rank[0]], " ", node_of_rank[0]);
}

}  // namespace

Place meet_entered(store::Client& store, const std::string& prefix, const Plan& plan, const std::string& identity,
                   Deadline deadline, const char* api);

std::string absent_ranks(store::Client& store, const std::string& prefix, const std::string& what, int size,
                         Deadline deadline) {
  std::vector<std::string> keys;
  keys.reserve(size);
  for (int rank = 0; rank < size; ++rank) keys.push_back(key(prefix, what, rank));
  std::vector<bool> present;
  try {
    present = store.check(keys, deadline);
  } catch (const Error&) {
    return "";
  }
  std::string list;
  int named = 0, more = 0;
  for (int rank = 0; rank < size && rank < static_cast<int>(present.size()); ++rank) {
    if (present[rank]) continue;
    if (named < 32) {
      list += concat(named ? ", " : "", rank);
      ++named;
    } else {
      ++more;
    }
  }
  if (more) list += concat(" and ", more, " more");
  return list;
}

std::string shared_absent_ranks(store::Client& store, const std::string& prefix, const std::string& what,
                                const std::string& occasion, int size, Deadline deadline) {
  const std::string list_key = concat(prefix, "absent/", what, "/", occasion);
  try {
    if (store.add(list_key + "/asked", 1, deadline) == 1) {
      std::string list = absent_ranks(store, prefix, what, size, deadline);
      store.set(list_key, list, deadline);
      return list;
    }
    return store.get(list_key, deadline);
  } catch (const Error&) {
    // The first to ask did not say in time (it may have died asking): read for itself,
    // where that stays cheap.
    if (size > kOwnDiagnosisRanks) return "";
    return absent_ranks(store, prefix, what, size, Deadline::after_ms(kDiagnosisMs));
  }
}

void enter(store::Client& store, const std::string& prefix, Deadline deadline) {
  store.add(prefix + "entered", 1, deadline);
}

void depart_after_failure(store::Client& store, const std::string& prefix, bool serves_store) {
  auto deadline = Deadline::after_ms(kLingerMs);
  try {
    store.add(prefix + "departed", 1, deadline);
    // A rank the store declared lost (meet's watch) will never depart: it counts as gone.
    while (serves_store && !deadline.expired() &&
           store.add(prefix + "departed", 0, deadline) + store.add(store::lost_count_key(prefix), 0, deadline) <
               store.add(prefix + "entered", 0, deadline)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const Error&) {
    // The store is gone or aborted: nobody is left to wait for.
  }
}

void unwatch(store::Client& store) {
  try {
    store.heartbeat(0, "", Deadline::after_ms(kDiagnosisMs));
  } catch (const Error&) {
    // The store is gone: it watches nobody.
  }
}

Place meet(store::Client& store, const std::string& prefix, const Plan& plan, const std::string& identity,
           Deadline deadline, const char* api) {
  try {
    return meet_entered(store, prefix, plan, identity, deadline, api);
  } catch (const Error&) {
    unwatch(store);  // a clean leave: this rank's exit is no loss for the others
    depart_after_failure(store, prefix, plan.serve_store);
    throw;
  }
}

// Two round trips for most ranks, each a pipeline of requests:
//   1. enter; claim the rank (its "who" key, set only if absent: the answer names a
//      first claimant); agree on the world size
//   2. once both claims stood: the store's watch; count the arrival; wait for this
//      rank's place, or an abort, or a loss, or a connection the store turned away
// The last to arrive says so (all_arrived); rank 0 waits for that instead of its
// place, numbers the nodes and publishes every place.
Place meet_entered(store::Client& store, const std::string& prefix, const Plan& plan, const std::string& identity,
                   Deadline deadline, const char* api) {
  std::string where = concat("at the rendezvous ", plan.init_method, " (store ", store.address(), ")");
  const std::string who = identity + "\n" + plan.node_key;
  const std::string size_text = std::to_string(plan.world_size);

  auto claim = store.pipeline(deadline);
  claim->add(prefix + "entered", 1);
  size_t claimed = claim->compare_set(key(prefix, "who", plan.rank), "", who);
  size_t agreed = claim->compare_set(prefix + "world_size", "", size_text);
  claim->wait_all();
  if (claim->value(claimed) != who) {
    std::string first = claim->value(claimed);
    abort_meeting(
        store, prefix, Status::kInvalidArgument,
        concat(api, ": rank ", plan.rank, " is claimed twice ", where, ": by ", first.substr(0, first.find('\n')),
               " and by ", identity, "; give every process its own rank (check TUTTI_RANK, RANK or the launcher)"),
        deadline);
  }
  if (claim->value(agreed) != size_text) {
    abort_meeting(store, prefix, Status::kMismatch,
                  concat(api, ": rank ", plan.rank, " (", identity, ") was told the world has ", plan.world_size,
                         " ranks, but a rank before it was told ", claim->value(agreed), " ", where,
                         "; give every rank the same world size"),
                  deadline);
  }

  DenialWatch denials;
  auto arrive = store.pipeline(deadline);
  arrive->heartbeat(watch_timeout_ms(deadline), "");
  arrive->member(prefix, plan.rank);
  size_t arrived = arrive->add(prefix + "arrived", 1);
  size_t ended = arrive->get_any({plan.rank == 0 ? prefix + "all_arrived" : key(prefix, "place", plan.rank),
                                  prefix + "abort", store::lost_key(prefix, 1), store::kRefusedKey});
  arrive->wait(arrived);
  if (arrive->number(arrived) == plan.world_size) store.set(prefix + "all_arrived", "", deadline);
  const int64_t first_report_ms =
      settings::integer("TUTTI_WAIT_REPORT_MS", 0, 24 * 3600 * 1000).value_or(settings::kDefaultWaitReportMs);
  // Waits in slices: to the next report, and for rank 0 to its next look for a denial.
  const bool watches_denials = plan.serve_store;
  for (int64_t waited_ms = 0, report_ms = first_report_ms;
       (first_report_ms > 0 || watches_denials) && !deadline.expired();) {
    int64_t slice_ms = first_report_ms > 0 ? report_ms - waited_ms : kDenialPollMs;
    if (watches_denials) slice_ms = std::min(slice_ms, kDenialPollMs);
    if (arrive->answered_by(ended, Deadline::after_ms(slice_ms))) break;
    waited_ms += slice_ms;
    if (deadline.expired()) break;
    if (watches_denials) denials.check(store, prefix, plan, where, deadline, api);
    if (first_report_ms > 0 && waited_ms >= report_ms) {
      report_arrival_wait(store, prefix, plan, where, waited_ms, deadline, api);
      report_ms *= 2;
    }
  }
  try {
    arrive->wait(ended);
  } catch (const Error& error) {
    if (error.status() != Status::kTimeout) throw;
    std::string missing = unarrived_ranks(store, prefix, plan, "timeout");
    fail(Status::kTimeout,
         concat(api, ": rank ", plan.rank, " timed out ", where, ": ",
                missing.empty() ? std::string("some ranks never arrived (the store could not say which)")
                                : missing_ranks(missing, plan.world_size, "never arrived", "came"),
                "; start every rank with the same init method and world size, or raise "
                "config.init_timeout_ms (TUTTI_INIT_TIMEOUT_MS)",
                denial_clause(store)));
  }
  int64_t which = arrive->number(ended);
  if (which == 1) fail_from_abort_key(store, prefix, deadline);
  if (which == 2) fail_on_loss(store, prefix, plan, where, deadline, api);
  if (which == 3) fail_on_refusal(store, prefix, plan, where, arrive->value(ended), api);

  std::string place_text =
      plan.rank == 0 ? publish_places(store, prefix, plan.world_size, deadline) : arrive->value(ended);
  Place place;
  place.rank = plan.rank;
  place.size = plan.world_size;
  if (sscanf(place_text.c_str(), "%d %d %d", &place.local_rank, &place.local_size, &place.node_rank) != 3) {
    fail(Status::kInternal, concat(api, ": the store holds a malformed place \"", place_text, "\" for rank ", plan.rank,
                                   "; please report this"));
  }
  // What the launcher said wins over what the meeting inferred from node names.
  if (plan.local_rank >= 0) place.local_rank = plan.local_rank;
  if (plan.local_size >= 0) place.local_size = plan.local_size;
  if (plan.node_rank >= 0) place.node_rank = plan.node_rank;
  return place;
}

namespace {

// Until every rank has left, or, once the store has declared some lost (they never
// will leave), until every rank has either left or been lost. A wait past
// kLeaveQuietMs says whom it waits for and how long it may last: it can take the
// whole init timeout, and a destroy that hangs for minutes without a word looks hung.
// The ranks that have not left, for the message of a host that waits for them: read by
// the host itself, or, in a large world, where every node's relay host waits too, read
// once for them all.
std::string staying_ranks(store::Client& store, const std::string& prefix, int size) {
  auto deadline = Deadline::after_ms(kDiagnosisMs);
  return size <= kOwnDiagnosisRanks ? absent_ranks(store, prefix, "left", size, deadline)
                                    : shared_absent_ranks(store, prefix, "left", "leave", size, deadline);
}

void wait_for_the_others(store::Client& store, const std::string& prefix, int size, Deadline deadline) {
  const std::vector<std::string> ends = {prefix + "all_left", store::lost_key(prefix, 1)};
  size_t ended = 0;
  try {
    ended = store.wait_any(ends, Deadline(std::min(deadline.at(), Deadline::after_ms(kLeaveQuietMs).at())));
  } catch (const Error& error) {
    if (error.status() != Status::kTimeout || deadline.expired()) throw;
    std::string staying = staying_ranks(store, prefix, size);
    log::warn("this rank hosts the rendezvous store (or its node's relay), so its tutti_comm_destroy waits (up to ",
              deadline.remaining_ms(), " ms, the init timeout) for ranks ", staying.empty() ? "?" : staying,
              " to leave before closing the store; they leave when they destroy their communicators or exit");
    ended = store.wait_any(ends, deadline);
  }
  if (ended == 0) return;
  wait_present_or_lost(store, prefix, "left", prefix, size, deadline);
}

}  // namespace

std::vector<bool> wait_present_or_lost(store::Client& store, const std::string& prefix, const std::string& what,
                                       const std::string& lost_prefix, int size, Deadline deadline) {
  std::vector<std::string> keys;
  for (int rank = 0; rank < size; ++rank) {
    keys.push_back(key(prefix, what, rank));
    keys.push_back(store::lost_rank_key(lost_prefix, rank));
  }
  std::string missing;  // at the last look
  while (true) {
    std::vector<bool> present;
    try {
      present = store.check(keys, deadline);
    } catch (const Error& error) {
      // The deadline passed during the look, or during the sleep before it (most
      // timeouts): the answer is still the ranks missing at the last look.
      if (error.status() != Status::kTimeout || missing.empty()) throw;
      fail(Status::kTimeout, missing);
    }
    std::vector<bool> alive(static_cast<size_t>(size));
    missing.clear();
    for (int rank = 0; rank < size; ++rank) {
      bool has_key = present[2 * rank];
      bool lost = present[2 * rank + 1];
      alive[rank] = has_key && !lost;
      if (!has_key && !lost) missing += concat(missing.empty() ? "" : ", ", rank);
    }
    if (missing.empty()) return alive;
    if (deadline.expired()) fail(Status::kTimeout, missing);
    std::this_thread::sleep_for(std::chrono::milliseconds(kPresentPollMs));
  }
}

void leave(store::Client& store, const std::string& prefix, int rank, int size, bool wait_for_all, Deadline deadline) {
  try {
    auto left = store.pipeline(deadline);
    left->set(key(prefix, "left", rank), "");
    size_t count = left->add(prefix + "left", 1);
    left->wait_all();
    if (left->number(count) == size) store.set(prefix + "all_left", "", deadline);
    if (wait_for_all) wait_for_the_others(store, prefix, size, deadline);
  } catch (const Error& error) {
    if (!wait_for_all) return;
    std::string staying = staying_ranks(store, prefix, size);
    log::warn("closing the rendezvous store although ranks ", staying.empty() ? "?" : staying, " have not left it (",
              error.what(), "); they will see the store as lost");
  }
}

}  // namespace tutti::rendezvous
