// The rendezvous store's server: a key-value store served over TCP on the event loop,
// by rank 0 or by the launcher. Protocol in protocol.h.
//
// It never crashes and never grows without bound on bad input: a frame that is
// garbage, oversized, truncated at close, or breaks a limit drops that connection
// (or answers with an error status, for a well-formed request that breaks a limit on
// keys or values) and writes one log line naming the peer's address.
//
// With a job secret, a client must prove it knows the secret before any request but
// HELLO is served, and the server proves it back (handshake.h); a client that cannot
// is answered kDenied and dropped, with one log line naming its address. A peer that
// does not finish the handshake within handshake_timeout_ms is dropped the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/loop/loop.h"

namespace tutti::store {

struct ServerLimits {
  size_t max_frame_bytes = 16u << 20;  // one request or reply on the wire
  size_t max_key_bytes = 4096;
  size_t max_value_bytes = 8u << 20;
  size_t max_keys = 1u << 20;         // keys held at once
  size_t max_total_bytes = 1u << 30;  // keys and values held at once
  // A process here holds at most 20,000 descriptors; the store serves fewer still when
  // its process's limit (ulimit -n) leaves less room.
  size_t max_connections = 16384;
  size_t max_waiters_per_connection = 1024;
  // From accept to the end of HELLO (and of authentication): a peer that connects and
  // says nothing holds a descriptor of a limited supply, so it gets this long.
  uint64_t handshake_timeout_ms = 10000;
  // Whether a rank it declares lost is logged here too. tutti launch's store leaves it
  // to the ranks, which say it with what the lost rank was doing, and to the launcher,
  // which reports every rank's exit: a line of its own would repeat them, and call
  // "lost" the ranks the launcher itself stopped.
  bool log_losses = true;
  // Told, on the store's loop thread, of each rank declared lost for its silence (not
  // for a closed connection: that process is gone, or chose to go): its identity
  // ("host:pid") and why. tutti launch --restart kills such a rank, frozen or cut off,
  // so that it can start another in its place.
  std::function<void(const std::string& identity, const std::string& reason)> on_silent_loss;
};

struct ServerStats {
  size_t connections = 0;
  size_t peak_connections = 0;  // the most open at once since start
  size_t keys = 0;
  size_t bytes = 0;                  // keys and values held
  uint64_t requests = 0;             // served since start
  uint64_t reply_bytes = 0;          // written since start, frames whole
  uint64_t writes = 0;               // socket writes that carried them: replies of one loop
                                     // turn to one connection go out together
  uint64_t dropped_connections = 0;  // for protocol violations, denial or a handshake timeout
  uint64_t denied_connections = 0;   // of those, for failing authentication
  uint64_t refused_connections = 0;  // turned away for want of room (see kRefusedKey)
};

// Where the store says why it turned a connection away for want of room (its
// max_connections, or its process's descriptor limit): "the connection from <peer>:
// <why>", written at the first refusal and deleted once the store has room again. A
// rank that cannot connect can never arrive, so the ranks waiting in a meeting read it
// and fail at once (rendezvous/meeting.h) instead of waiting out their init timeout.
// The connection itself is answered with the same reason and closed: never a silent
// close.
constexpr const char* kRefusedKey = "tutti.store/refused";

// The store's last denial of a connection that failed authentication: "<ms since the
// epoch>\n<peer>: <why>". A rank started without the job's secret (TUTTI_SECRET) is
// denied before it can claim its rank, so the others see it as a rank that never
// arrives; their wait reports and timeouts name this denial as the likely cause. It
// does not fail the meeting at once: a stranger on the machine could then fail any job.
constexpr const char* kDeniedKey = "tutti.store/denied";

class Upstream;  // relay.h

class Server {
 public:
  // Listens on host:port (port 0 picks a free one) on `loop`. Throws Error: kTransport
  // when it cannot bind (the message says the address and why, e.g. in use), and
  // kInvalidArgument for a host that does not resolve to a local address. secret: the
  // job's (TUTTI_SECRET); "" serves clients without one, and only those. upstream: a
  // connection to another store makes this one its relay (relay.h: start_relay).
  static std::unique_ptr<Server> start(std::shared_ptr<loop::Loop> loop, const std::string& host, uint16_t port,
                                       ServerLimits limits = {}, std::string secret = {},
                                       std::shared_ptr<Upstream> upstream = {});
  // Closes the listener and every connection; clients with calls pending see kPeerLost.
  // Any thread but the loop's; returns once the loop has let go of every handle.
  virtual ~Server() = default;

  virtual uint16_t port() const = 0;
  virtual std::string host() const = 0;
  // Thread-safe snapshot.
  virtual ServerStats stats() const = 0;
};

}  // namespace tutti::store
