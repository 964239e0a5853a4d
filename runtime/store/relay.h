// A relay: a store in front of the store, for a node's ranks (or any set of them). The
// ranks connect to it as to the store, with the same protocol and secret. It watches
// them itself (their heartbeats, their connections closing) and carries everything
// else up one connection of its own: the store then holds a connection, and a
// heartbeat a second, per relay rather than per rank, which is what lets one store
// serve 100,000 ranks under a process's 20,000 descriptors.
//
// What the store above learns: each rank the relay watches, by RELAY_JOIN (and
// RELAY_LEAVE once it has left), so that when the relay itself is lost (its node
// gone, its process frozen past its heartbeat timeout), every rank it still carried
// is declared lost with it; and each loss the relay declares, written as the store
// writes its own (loss_event.h), so the ranks read losses the same way wherever they
// were watched. A HEARTBEAT that asks for the store's clock gets the relay's estimate
// of it (its own clock plus the offset its heartbeats measure), without a trip up.
//
// Keys live in the store only: a relay holds no keys, and a rank through a relay sees
// the same keys as a rank connected to the store. Its requests go up in the order they
// came, each answered when the store answers it. ROSTER through a relay lists the
// ranks the relay watches; the store's ROSTER lists a relay's ranks under the relay's
// name (tutti top then shows the relay's liveness for them).
//
// If the relay loses its store, it closes every connection: its ranks see their store
// lost, as they would without a relay.
//
// Relays stack: a relay may stand in front of another (a node's in front of one for a
// group of nodes), which then carries that relay's ranks up as its own and watches the
// relay as it watches a rank. The store then holds a connection per top relay.
//
// GETs of one key from several of its ranks wait at the store as one (SharedGets): the
// store holds a waiter per relay rather than per rank for what every rank waits on
// (its communicator's next loss event), and a loss wakes the relays, which answer
// their ranks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/loop/loop.h"
#include "runtime/store/client.h"
#include "runtime/store/liveness.h"
#include "runtime/store/server.h"

namespace tutti::store {

struct RelaySetup {
  // The store it relays to, and the job's secret (for both sides).
  std::string store_host;
  uint16_t store_port = 0;
  std::string secret;
  // Where it listens for ranks (port 0: a free one).
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  // Its own watch by the store: a heartbeat per interval, lost after timeout of
  // silence. A relay that is lost takes its ranks with it, so its timeout should be
  // no shorter than theirs.
  int64_t heartbeat_interval_ms = 1000;
  int64_t heartbeat_timeout_ms = 20000;
  ServerLimits limits;
};

// The relay's connection to the store above it: where its Liveness writes, what its
// server forwards through, and its heartbeats. Loop thread, but for connect.
class Upstream final : public LivenessSink {
 public:
  // Connects (retrying until deadline, as a rank would) and authenticates.
  static std::shared_ptr<Upstream> connect(const std::shared_ptr<loop::Loop>& loop, const RelaySetup& setup,
                                           Deadline deadline);

  // LivenessSink: loss events and activity go up; RELAY_JOIN/LEAVE for each rank watched.
  void set(const std::string& key, const std::string& value) override;
  void add(const std::string& key, int64_t delta, std::function<void(int64_t)> then) override;
  void watched(const std::string& prefix, int64_t rank, bool joined) override;

  // Sends request up; done gets the store's reply (see Client::request_async).
  void forward(protocol::Request request, Client::Answered done);
  // One heartbeat up, saying how many ranks it watches; measures the clock offset.
  void beat(size_t ranks);
  // The store's wall clock in microseconds since the epoch, as far as this relay knows.
  int64_t store_clock_us() const;
  // Called once, on the loop, when the connection to the store is lost.
  void on_lost(std::function<void(const std::string& why)> lost) { on_lost_ = std::move(lost); }
  // The relay is closing: answers still to come are dropped, not acted on.
  void close();

  int64_t heartbeat_interval_ms() const { return setup_.heartbeat_interval_ms; }
  std::string address() const { return client_->address(); }

  Upstream(std::unique_ptr<Client> client, RelaySetup setup) : client_(std::move(client)), setup_(std::move(setup)) {}
  // Closes the connection first: the answers it then fails find this closed.
  ~Upstream() override;

 private:
  void lost(const std::string& why);
  // A request of its own, whose failure is logged (and, for a lost store, acted on).
  void send(protocol::Request request, std::function<void(const protocol::Reply&)> then);

  std::unique_ptr<Client> client_;
  const RelaySetup setup_;
  std::function<void(const std::string&)> on_lost_;
  bool lost_ = false;
  bool closed_ = false;
  std::atomic<int64_t> clock_offset_us_{0};
};

// The GETs a relay carries up as one per key. A GET joins the one in flight for its key
// if that one is answered no later than it asked to be; the store's answer then goes
// to every GET that joined. When the shared GET times out, those at (or within a
// hundredth of their wait of) their own deadline time out with it, and the others wait
// on a new one. Loop thread only, like the relay's server.
class SharedGets {
 public:
  struct Asker {
    uint64_t serial = 0;  // its connection's
    uint32_t id = 0;      // its request's
    uint64_t deadline_ms = 0;
    uint64_t slack_ms = 0;  // how early its timeout may come: a hundredth of its wait, at most 1 s
  };
  enum class Join {
    kJoined,  // it waits on the GET in flight
    kAskUp,   // none was in flight: send one, until asker.deadline_ms
    kAlone,   // the one in flight waits longer than it asked: send its own
  };
  Join join(const std::string& key, const Asker& asker);
  // The store answered key's shared GET (a value, or an error): every asker gets it.
  std::vector<Asker> answered(const std::string& key);
  // key's shared GET timed out at now_ms: the askers due then get the timeout; *next is
  // the deadline of a new shared GET for the others, or 0 when none is left.
  std::vector<Asker> timed_out(const std::string& key, uint64_t now_ms, uint64_t* next);
  size_t keys() const { return gets_.size(); }

 private:
  struct Shared {
    uint64_t deadline_ms = 0;  // the GET in flight's
    std::vector<Asker> askers;
  };
  std::unordered_map<std::string, Shared> gets_;
};

// Starts a relay on loop: connects to the store (retrying until deadline), then
// listens. Throws Error as Client::connect and Server::start do.
std::unique_ptr<Server> start_relay(const std::shared_ptr<loop::Loop>& loop, const RelaySetup& setup,
                                    Deadline deadline);

}  // namespace tutti::store
