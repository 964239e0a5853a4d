// A communicator's failure detector. It runs on the process's event loop, never on
// the user's thread, so a rank that computes for minutes without calling tutti keeps
// beating:
//   - every interval it sends the store a heartbeat carrying this rank's activity; the
//     store declares the rank lost when they stop for timeout (frozen, stopped, cut
//     off) or when its connection closes without a clean leave (killed, crashed);
//   - it waits on the communicator's loss events (store/loss_event.h), so a loss
//     anywhere reaches every rank within milliseconds of the store noticing it;
//   - a store that stops answering heartbeats for timeout, or whose connection
//     breaks, is a loss too: of the store's host.
// Each loss is reported once through on_failure, with a message naming the rank, its
// host and pid, why it was declared lost and what it was doing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/status.h"
#include "runtime/health/activity_board.h"
#include "runtime/loop/loop.h"
#include "runtime/store/client.h"

namespace tutti::health {

struct MonitorSetup {
  std::shared_ptr<loop::Loop> loop;
  store::Client* store = nullptr;  // the communicator's own connection
  std::string prefix;              // the communicator's keys
  int rank = 0;
  std::string where;        // Comm::describe(), for messages
  std::string store_owner;  // "rank 0" or "tutti launch", for messages
  int64_t interval_ms = 1000;
  int64_t timeout_ms = 10000;
  const ActivityBoard* board = nullptr;
  // Called on the loop thread for each loss: the first one makes the communicator
  // unusable. Must not block.
  std::function<void(Status status, const std::string& why)> on_failure;
};

class Monitor {
 public:
  // Starts watching on the loop, without waiting for the store: its first heartbeat
  // (this communicator's timeout, in place of the meeting's) and its wait on the loss
  // events go out at once, and what goes wrong with them is reported through
  // on_failure, as later. The connection must already be this rank's in the group
  // under prefix (rendezvous::meet says so to the store). Throws Error(kAborted) only
  // when the loop has stopped.
  static std::unique_ptr<Monitor> start(MonitorSetup setup);
  // Leaves cleanly (the store stops watching this rank, so closing its connection is
  // no loss), bounded by a couple of seconds, then stops the timers.
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // The ranks declared lost so far, in the order the store declared them. Any thread.
  std::vector<int> lost_ranks() const;
  // Whether the store itself is lost to this rank (or declared this rank lost). Any thread.
  bool store_lost() const;

  struct State;  // loop-side, shared with the callbacks in flight

 private:
  explicit Monitor(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace tutti::health
