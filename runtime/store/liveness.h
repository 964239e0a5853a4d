// Failure detection on the store's side. A client that sends HEARTBEAT asks to be
// watched: from then on the store declares it lost when its connection closes before
// it stops the watch (HEARTBEAT with timeout 0: a clean leave), or when nothing at all
// arrives from it for its timeout (frozen, stopped, cut off). MEMBER tells the store
// which groups (communicators) the connection is a rank of; a loss writes an event
// under each of them (loss_event.h), which wakes every rank waiting on it.
//
// The heartbeats come from each process's event loop thread, so a rank that computes
// for hours without calling tutti keeps beating. Loop thread only, like KeySpace.
//
// The store's own loop can stall too (its process stopped, swapped out, starved): what
// the ranks sent meanwhile sits unread in its sockets, and libuv runs the late sweep
// before it reads them. So a sweep that comes late does not count the lateness as
// anybody's silence; but the store's own process was frozen as long as the store, and
// the ranks that use the store gave up on it when that passed their timeout, so its
// own connections are then declared lost, for that.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/store/key_space.h"
#include "runtime/store/loss_event.h"

namespace tutti::store {

// Where a Liveness writes what it learns (loss events, activity), and whom it tells
// which ranks it watches: the store's own keys, or, in a relay, the store above it.
class LivenessSink {
 public:
  virtual ~LivenessSink() = default;
  // Failures are the sink's to log: a loss is recorded as well as it can be.
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Adds delta to the integer at key, then calls then with the new value (not on failure).
  virtual void add(const std::string& key, int64_t delta, std::function<void(int64_t)> then) = 0;
  // Rank `rank` of the group under prefix is watched here from now on (joined), or no
  // longer: it left, or its loss is being recorded.
  virtual void watched(const std::string& prefix, int64_t rank, bool joined) = 0;
};

// The store's own keys: a loss is recorded at once, and the ranks it watches are its
// own business.
class KeySpaceSink final : public LivenessSink {
 public:
  explicit KeySpaceSink(KeySpace& keys) : keys_(keys) {}
  void set(const std::string& key, const std::string& value) override;
  void add(const std::string& key, int64_t delta, std::function<void(int64_t)> then) override;
  void watched(const std::string&, int64_t, bool) override {}

 private:
  KeySpace& keys_;
};

class Liveness {
 public:
  // sweep_interval_ms: how often the caller sweeps; a sweep later than that finds the
  // store's loop stalled.
  // log_losses: whether each loss is logged here too (ServerLimits::log_losses).
  // on_silent_loss: told of each connection declared lost for its silence
  // (ServerLimits::on_silent_loss); may be empty.
  Liveness(LivenessSink& sink, uint64_t sweep_interval_ms, bool log_losses = true,
           std::function<void(const std::string& identity, const std::string& reason)> on_silent_loss = {});

  // Any frame from conn counts as a sign of life.
  void heard_from(const void* conn, uint64_t now_ms);
  // HEARTBEAT: starts, refreshes (timeout_ms > 0) or stops (0) the watch of conn.
  // identity and address name it in events; activity is what it reports doing.
  void heartbeat(const void* conn, const std::string& identity, const std::string& address, int64_t timeout_ms,
                 const std::string& activity, uint64_t now_ms);
  // MEMBER: conn is rank `rank` of the group under prefix (rank < 0: no longer).
  void member(const void* conn, const std::string& prefix, int64_t rank);
  // RELAY_JOIN (joined) and RELAY_LEAVE: conn, a relay, carries rank `rank` of the group
  // under prefix, or no longer. A relay carries many ranks of one group; when it is
  // lost, so is each it still carries. Returns how many it carries now.
  size_t relayed(const void* conn, const std::string& prefix, int64_t rank, bool joined);

  // The members of the groups under prefix (every group for ""), encoded as
  // roster.h's entries, ordered by group and rank.
  std::vector<std::string> roster(const std::string& prefix, uint64_t now_ms) const;

  // conn is closing. If it was watched, it is lost for `reason`: events are written.
  void closed(const void* conn, const std::string& reason, uint64_t now_ms);
  // The watched connections that have been silent past their timeout, or that belong
  // to the store's own process when the store was stalled past their timeout, each
  // declared lost (events written) and forgotten; the caller closes them.
  std::vector<const void*> sweep(uint64_t now_ms);
  // The last sweep is two intervals old: the loop was stalled, and the caller should
  // sweep before it reads what arrived meanwhile.
  bool sweep_overdue(uint64_t now_ms) const { return watching() && now_ms > last_sweep_ms_ + 2 * sweep_interval_ms_; }

  bool watching() const { return !timeouts_.empty(); }
  size_t watched_count() const { return timeouts_.size(); }

 private:
  using Deadlines = std::multimap<uint64_t, const void*>;

  // A connection that sent HEARTBEAT or MEMBER; watched while timeout_ms > 0.
  struct Entry {
    std::string identity;
    std::string address;
    int64_t timeout_ms = 0;
    uint64_t last_heard_ms = 0;    // on the unstalled clock
    Deadlines::iterator deadline;  // in deadlines_, while watched
    std::string activity;
    uint64_t activity_ms = 0;                             // when activity was reported
    std::vector<std::pair<std::string, int64_t>> groups;  // (prefix, rank)
    std::set<std::pair<std::string, int64_t>> relayed;    // a relay's ranks: (prefix, rank)
  };

  void set_timeout(const void* conn, Entry& entry, int64_t timeout_ms);
  // Moves a watched entry's deadline to last_heard_ms + timeout_ms: the end of the
  // queue, in one step, when every watch has the same timeout.
  void requeue(Entry& entry);
  void forgive_stall(uint64_t stalled_ms, uint64_t now_ms, std::vector<const void*>* lost);
  // The store's clock less the stalls forgiven so far: what last_heard_ms and the
  // deadlines count on, so that forgiving a stall moves them all at once.
  uint64_t unstalled(uint64_t now_ms) const { return now_ms - stalled_ms_; }
  // Writes the loss events of entry's ranks, and forgets them: lost once.
  void declare_lost(Entry& entry, const std::string& reason, uint64_t now_ms);
  void record_loss(const std::string& prefix, const LossEvent& event);

  LivenessSink& sink_;
  std::unordered_map<const void*, Entry> entries_;
  // The watched connections by when they turn silent for good (last heard + timeout,
  // on the unstalled clock): a sweep reads only those past due, not every connection,
  // so watching 100,000 costs the store nothing between their frames.
  Deadlines deadlines_;
  std::multiset<int64_t> timeouts_;      // of the watched connections
  std::unordered_set<const void*> own_;  // the connections from this process
  uint64_t stalled_ms_ = 0;              // the stalls forgiven so far
  const uint64_t sweep_interval_ms_;
  uint64_t last_sweep_ms_ = 0;      // or when watching last began
  const std::string own_identity_;  // this process's "host:pid", as its clients say HELLO
  const bool log_losses_;
  const std::function<void(const std::string& identity, const std::string& reason)> on_silent_loss_;
};

}  // namespace tutti::store
