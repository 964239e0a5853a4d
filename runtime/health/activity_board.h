// What each rank of a communicator is doing, so that a timed-out collective can say
// which ranks had not joined it and where they were instead ("ranks that had not
// joined all_reduce #42: 2 (last seen in broadcast #41 for 3.2 s)"), and a loss can say
// what the lost rank was in.
//
// The running thread only touches atomics: no cost on the fast path. The heartbeats
// (monitor.h) carry current() to the store about once a second, and the store keeps
// each rank's latest at activity/<rank> under the communicator's prefix, so the
// picture is at most one heartbeat interval old.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/common/status.h"
#include "runtime/health/op_history.h"
#include "runtime/store/client.h"

namespace tutti::health {

// One rank's state, as the heartbeats carry it:
// "<seq> <running 0|1> <since ms> <name> <waiting> <status of the last one>".
struct Activity {
  uint32_t seq = 0;  // last collective started (0: none yet)
  bool running = false;
  Status status = Status::kOk;  // how the last one ended, once it has
  int64_t since_ms = 0;         // wall clock of the last change, ms since the epoch
  std::string name;             // "all_reduce"; "-" before any
  std::string waiting;          // a blocking send or receive under way: "recv/0/99" (peer 0, tag 99); "" if none
};

std::string encode(const Activity& activity);
std::optional<Activity> decode_activity(const std::string& text);
// "in all_reduce #42", "idle after all_reduce #42", "idle after all_reduce #42, which
// failed (MISMATCH)", "idle, before any collective", "in recv from rank 0 (tag 99),
// after all_reduce #41".
std::string describe(const Activity& activity);

class ActivityBoard {
 public:
  ActivityBoard(store::Client& store, std::string prefix, int rank, int size);
  ActivityBoard(const ActivityBoard&) = delete;
  ActivityBoard& operator=(const ActivityBoard&) = delete;

  // The issuing thread queues collective `seq`; the running thread enters it and
  // leaves it with its status. A blocking collective is issued and entered at once,
  // by started_now. now_ms is coarse_now_ms() (deadline.h). Strings are static.
  void issued(uint32_t seq, const OpFacts& facts, int64_t now_ms) { history_.issued(seq, facts, now_ms, false); }
  void started(uint32_t seq, const char* name, int64_t now_ms);
  void started_now(uint32_t seq, const OpFacts& facts, int64_t now_ms);
  void finished(Status status);
  // The user's thread blocks in a send or receive (name "send" or "recv"), and is done.
  void waiting(const char* name, int peer, int tag);
  void done_waiting();

  // The recent operations, one per line, for tutti_comm_dump and timeout reports.
  std::string recent_operations() const { return history_.format(); }

  // This rank's state, encoded. Any thread.
  std::string current() const;

  // Publishes this rank's state now and reads every other rank's: the ranks whose
  // last started collective is before `seq`, each with what it was doing, e.g.
  // "2 (last seen in broadcast #41 for 3.2 s), 3 (no report: ...)". A rank that
  // joined less than a heartbeat interval ago may not have reported it yet, hence
  // "last seen". Empty if every rank reported joining. *failed gets the ranks that
  // joined `seq` and failed it, e.g. "2 (MISMATCH)", whose peers then wait for data
  // that never comes. Bounded by deadline; never throws.
  std::string absent_from(uint32_t seq, Deadline deadline, std::string* failed);
  // What `rank` was doing at its last report, e.g. "in all_reduce #42 (for 3.2 s)", or
  // that it has not reported; publishes this rank's state first. Bounded by deadline;
  // never throws.
  std::string whereabouts(int rank, Deadline deadline);

 private:
  store::Client& store_;
  std::string prefix_;  // the communicator's
  int rank_;
  int size_;
  std::atomic<uint32_t> seq_{0};
  std::atomic<bool> running_{false};
  std::atomic<const char*> name_{""};
  std::atomic<int64_t> since_ms_;                   // coarse_now_ms(); current() gives it as wall clock
  std::atomic<Status> status_{Status::kOk};         // how the last collective ended
  std::atomic<const char*> waiting_name_{nullptr};  // nullptr: not blocked in a send or receive
  std::atomic<int> waiting_peer_{0};
  std::atomic<int> waiting_tag_{0};
  OpHistory history_;
};

}  // namespace tutti::health
