#include "runtime/store/liveness.h"

#include <algorithm>
#include <tuple>

#include "runtime/common/concat.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/identity.h"
#include "runtime/common/log.h"
#include "runtime/store/loss_event.h"
#include "runtime/store/roster.h"

namespace tutti::store {
namespace {

// A stall shorter than this, and than half of every watched timeout, is ordinary
// scheduling noise: it is forgiven without a word.
constexpr uint64_t kStallWorthNamingMs = 500;

}  // namespace

void KeySpaceSink::set(const std::string& key, const std::string& value) {
  protocol::Request request;
  request.op = protocol::Op::kSet;
  request.keys = {key};
  request.value = value;
  auto reply = keys_.handle(request);
  if (reply && reply->status != Status::kOk) {
    log::error("rendezvous store: cannot write \"", key, "\": ", reply->message);
  }
}

void KeySpaceSink::add(const std::string& key, int64_t delta, std::function<void(int64_t)> then) {
  protocol::Request request;
  request.op = protocol::Op::kAdd;
  request.keys = {key};
  request.number = delta;
  auto reply = keys_.handle(request);
  if (!reply || reply->status != Status::kOk) {
    log::error("rendezvous store: cannot add to \"", key, "\": ", reply ? reply->message : "no answer");
    return;
  }
  then(reply->number);
}

Liveness::Liveness(LivenessSink& sink, uint64_t sweep_interval_ms, bool log_losses,
                   std::function<void(const std::string& identity, const std::string& reason)> on_silent_loss)
    : sink_(sink),
      sweep_interval_ms_(sweep_interval_ms),
      own_identity_(process_identity()),
      log_losses_(log_losses),
      on_silent_loss_(std::move(on_silent_loss)) {}

void Liveness::heard_from(const void* conn, uint64_t now_ms) {
  auto it = entries_.find(conn);
  if (it == entries_.end()) return;
  it->second.last_heard_ms = unstalled(now_ms);
  if (it->second.timeout_ms > 0) requeue(it->second);
}

void Liveness::requeue(Entry& entry) {
  auto node = deadlines_.extract(entry.deadline);
  node.key() = entry.last_heard_ms + static_cast<uint64_t>(entry.timeout_ms);
  // The hint makes it O(1) when the new deadline is the latest, as it is when all
  // watches share one timeout.
  entry.deadline = deadlines_.insert(deadlines_.end(), std::move(node));
}

void Liveness::set_timeout(const void* conn, Entry& entry, int64_t timeout_ms) {
  bool was = entry.timeout_ms > 0;
  bool is = timeout_ms > 0;
  if (was) timeouts_.erase(timeouts_.find(entry.timeout_ms));
  if (is) timeouts_.insert(timeout_ms);
  entry.timeout_ms = is ? timeout_ms : 0;
  if (was && !is) {
    deadlines_.erase(entry.deadline);
  } else if (!was && is) {
    entry.deadline = deadlines_.emplace(entry.last_heard_ms + static_cast<uint64_t>(timeout_ms), conn);
  } else if (is) {
    requeue(entry);
  }
}

void Liveness::heartbeat(const void* conn, const std::string& identity, const std::string& address, int64_t timeout_ms,
                         const std::string& activity, uint64_t now_ms) {
  Entry& entry = entries_[conn];
  entry.identity = identity;
  entry.address = address;
  entry.last_heard_ms = unstalled(now_ms);
  if (identity == own_identity_) own_.insert(conn);
  // The caller's sweeps start again now; the time nothing was watched is no stall.
  if (!watching() && timeout_ms > 0) last_sweep_ms_ = now_ms;
  set_timeout(conn, entry, timeout_ms);
  if (activity != entry.activity) {
    entry.activity = activity;
    for (const auto& [prefix, rank] : entry.groups) sink_.set(activity_key(prefix, rank), activity);
  }
  entry.activity_ms = now_ms;
}

void Liveness::member(const void* conn, const std::string& prefix, int64_t rank) {
  Entry& entry = entries_[conn];
  std::erase_if(entry.groups, [&](const auto& group) {
    if (group.first != prefix) return false;
    sink_.watched(group.first, group.second, false);
    return true;
  });
  if (rank < 0) return;
  entry.groups.emplace_back(prefix, rank);
  sink_.watched(prefix, rank, true);
}

size_t Liveness::relayed(const void* conn, const std::string& prefix, int64_t rank, bool joined) {
  Entry& entry = entries_[conn];
  if (joined) {
    entry.relayed.emplace(prefix, rank);
  } else {
    entry.relayed.erase({prefix, rank});
  }
  // A relay of relays: the store above must know the rank is carried through here, so
  // that it is declared lost with this relay too.
  sink_.watched(prefix, rank, joined);
  return entry.relayed.size();
}

std::vector<std::string> Liveness::roster(const std::string& prefix, uint64_t now_ms) const {
  std::vector<RosterEntry> members;
  for (const auto& [conn, entry] : entries_) {
    auto list = [&](const std::string& group, int64_t rank, bool relayed) {
      if (!prefix.empty() && group != prefix) return;
      RosterEntry member;
      member.prefix = group;
      member.rank = rank;
      // A relay's ranks: what the store knows of them is the relay's liveness.
      member.identity = relayed ? concat("relay ", entry.identity) : entry.identity;
      member.silent_ms = static_cast<int64_t>(unstalled(now_ms) - entry.last_heard_ms);
      member.timeout_ms = entry.timeout_ms;
      if (!relayed) member.activity = entry.activity;
      members.push_back(std::move(member));
    };
    for (const auto& [group, rank] : entry.groups) list(group, rank, false);
    for (const auto& [group, rank] : entry.relayed) list(group, rank, true);
  }
  std::sort(members.begin(), members.end(), [](const RosterEntry& a, const RosterEntry& b) {
    return std::tie(a.prefix, a.rank) < std::tie(b.prefix, b.rank);
  });
  std::vector<std::string> lines;
  lines.reserve(members.size());
  for (const auto& member : members) lines.push_back(encode(member));
  return lines;
}

void Liveness::closed(const void* conn, const std::string& reason, uint64_t now_ms) {
  auto it = entries_.find(conn);
  if (it == entries_.end()) return;
  if (it->second.timeout_ms > 0) {
    declare_lost(it->second, reason, now_ms);
  } else {
    for (const auto& [prefix, rank] : it->second.groups) sink_.watched(prefix, rank, false);
    for (const auto& [prefix, rank] : it->second.relayed) sink_.watched(prefix, rank, false);
  }
  set_timeout(conn, it->second, 0);
  entries_.erase(it);
  own_.erase(conn);
}

std::vector<const void*> Liveness::sweep(uint64_t now_ms) {
  std::vector<const void*> silent;
  uint64_t due_ms = last_sweep_ms_ + sweep_interval_ms_;
  last_sweep_ms_ = now_ms;
  if (now_ms > due_ms) forgive_stall(now_ms - due_ms, now_ms, &silent);
  // Past due: silent for longer than its timeout (quiet > timeout).
  const uint64_t now_unstalled = unstalled(now_ms);
  while (!deadlines_.empty() && deadlines_.begin()->first < now_unstalled) {
    const void* conn = deadlines_.begin()->second;
    Entry& entry = entries_.at(conn);
    uint64_t quiet_ms = now_unstalled - entry.last_heard_ms;
    const std::string reason = concat(
        "it sent nothing to the store for ", duration_text(static_cast<int64_t>(quiet_ms)), " (heartbeat timeout ",
        duration_text(entry.timeout_ms), "): it is frozen, stopped or cut off from the network");
    declare_lost(entry, reason, now_ms);
    if (on_silent_loss_) on_silent_loss_(entry.identity, reason);
    set_timeout(conn, entry, 0);  // lost once; the caller closes it
    silent.push_back(conn);
  }
  return silent;
}

// The store's loop ran stalled_ms late. The watched connections' silence meanwhile is
// the store's: the clock their deadlines run on moves back by as much, which moves
// every deadline at once (O(1), where requeueing each watch took about a fifth of the
// store's CPU at 10,000 simulated ranks). The store's own process was frozen with it, though,
// and past a connection's timeout the ranks gave up on the store.
void Liveness::forgive_stall(uint64_t stalled_ms, uint64_t now_ms, std::vector<const void*>* lost) {
  const int64_t smallest_timeout_ms = timeouts_.empty() ? INT64_MAX : *timeouts_.begin();
  if (stalled_ms >= kStallWorthNamingMs || 2 * stalled_ms >= static_cast<uint64_t>(smallest_timeout_ms)) {
    log::warn("rendezvous store: its event loop was stalled for ", duration_text(static_cast<int64_t>(stalled_ms)),
              " (its process stopped, swapped out or starved of CPU, or the loop busy in one long step); the ",
              "connections it watches are not held to account for that time");
  }
  stalled_ms_ += stalled_ms;
  for (const void* conn : own_) {
    Entry& entry = entries_.at(conn);
    if (entry.timeout_ms <= 0 || stalled_ms <= static_cast<uint64_t>(entry.timeout_ms)) continue;
    declare_lost(entry,
                 concat("its process, which serves the rendezvous store, was frozen for ",
                        duration_text(static_cast<int64_t>(stalled_ms)), ", past the heartbeat timeout (",
                        duration_text(entry.timeout_ms), "): the ranks that use the store have given up on it"),
                 now_ms);
    set_timeout(conn, entry, 0);  // lost once; the caller closes it
    lost->push_back(conn);
  }
}

void Liveness::declare_lost(Entry& entry, const std::string& reason, uint64_t now_ms) {
  LossEvent event;
  event.identity = entry.identity;
  event.address = entry.address;
  event.reason = reason;
  event.activity = entry.activity;
  event.activity_age_ms = entry.activity.empty() ? -1 : static_cast<int64_t>(now_ms - entry.activity_ms);
  // Said once, by the rank it has in the first communicator it joined (its world); the
  // store's key prefixes are its own business, not the reader's.
  if (!entry.groups.empty() && log_losses_) {
    log::warn("rendezvous store: rank ", entry.groups.front().second, " (", entry.identity, " at ", entry.address,
              ") is lost: ", reason);
  }
  for (const auto& [prefix, rank] : entry.groups) {
    // First, so that the store above a relay does not record it a second time.
    sink_.watched(prefix, rank, false);
    event.rank = rank;
    record_loss(prefix, event);
  }
  entry.groups.clear();
  if (!entry.relayed.empty()) {
    if (log_losses_) {
      log::warn("rendezvous store: the relay ", entry.identity, " at ", entry.address, " is lost, and with it the ",
                entry.relayed.size(), " ranks it carried: ", reason);
    }
    event.reason = concat("the relay that carried it to the store (", entry.identity, ") is lost: ", reason);
    event.activity.clear();
    event.activity_age_ms = -1;
    for (const auto& [prefix, rank] : entry.relayed) {
      sink_.watched(prefix, rank, false);
      event.rank = rank;
      record_loss(prefix, event);
    }
    entry.relayed.clear();
  }
}

void Liveness::record_loss(const std::string& prefix, const LossEvent& event) {
  std::string value = encode(event);
  sink_.add(lost_count_key(prefix), 1, [this, prefix, rank = event.rank, value](int64_t count) {
    sink_.set(lost_rank_key(prefix, rank), value);
    // Last: ranks wait on lost/<n>, and may read lost/rank/<r> as soon as it wakes them.
    sink_.set(lost_key(prefix, count), value);
  });
}

}  // namespace tutti::store
