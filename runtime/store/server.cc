#include "runtime/store/server.h"

#include <dirent.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <list>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/common/wall_clock.h"
#include "runtime/store/handshake.h"
#include "runtime/store/key_space.h"
#include "runtime/store/listeners.h"
#include "runtime/store/liveness.h"
#include "runtime/store/local_socket.h"
#include "runtime/store/protocol.h"
#include "runtime/store/relay.h"
#include "runtime/store/socket_address.h"

namespace tutti::store {
namespace {

using protocol::Op;
using protocol::ProtocolError;
using protocol::Reply;
using protocol::Request;

// Before HELLO a peer is a stranger: its frames may not be big.
constexpr size_t kHandshakeFrameBytes = 64 * 1024;
// Parked requests wait at most this long whatever they ask for, so that deadlines on
// the loop's clock never overflow.
constexpr int64_t kMaxWaitMs = int64_t{1} << 40;
// How often watched connections are checked for silence: a small fraction of any
// sensible heartbeat timeout, and nothing to do while no connection is watched.
constexpr uint64_t kSweepMs = 100;
// Why a watched connection that closes is lost, when nothing more specific is known.
constexpr const char* kClosedReason =
    "its connection to the store closed (the process exited, crashed, was killed, or aborted its communicator)";
// How many connections' replies one turn of the loop writes: some tens of ms of writes,
// well under the half second the store warns of as a stall of its loop.
constexpr size_t kFlushSlice = 1024;
// Descriptors the store leaves to the rest of its process (UCX, shared memory, files)
// when its limit (ulimit -n) is what bounds its connections.
constexpr size_t kDescriptorHeadroom = 64;
// How long ~Server waits for the loop to release the server's handles.
constexpr auto kCloseWait = std::chrono::seconds(10);

class ServerCore;

struct Connection {
  Connection(ServerCore* server_core, const std::string& secret)
      : core(server_core), decoder(kHandshakeFrameBytes), handshake(std::in_place, secret) {}

  // TCP, or a Unix socket from a client on this machine (local_socket.h).
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } socket;
  ServerCore* core;
  std::string peer;
  std::string identity;  // "host:pid", from HELLO
  protocol::Decoder decoder;
  bool greeted = false;      // and authenticated, where the server has a secret
  bool refused = false;      // accepted over capacity: its first frame is answered why, then it closes
  bool turned_away = false;  // answered kDenied or refused; closes once that is written
  bool closing = false;
  // Replies not yet written: every reply of one loop turn goes out in one write.
  std::string outbox;
  bool in_flush = false;  // listed in ServerCore::flush_, at flush_entry
  std::list<Connection*>::iterator flush_entry;
  std::unordered_set<Waiter*> waiters;
  std::optional<ServerHandshake> handshake;  // until greeted: then its nonces are let go
  // Until greeted: its place in ServerCore::greeting_, and when its time is up.
  std::list<Connection*>::iterator greeting_entry;
  bool in_greeting = false;
  uint64_t handshake_deadline = 0;
  uint64_t serial = 0;  // never reused: a relay's answers from above find it by this
  size_t relayed = 0;   // a relay's connection: the ranks it carries (RELAY_JOIN)
};

struct WriteRequest {
  uv_write_t req;
  std::string bytes;
  bool then_close = false;  // the connection's last words (a denial)
};

// The server's loop-side half. It owns itself (keep_alive_) while any of its handles
// is open, so that a ~Server that gives up waiting never frees memory the loop uses.
class ServerCore : public std::enable_shared_from_this<ServerCore> {
 public:
  ServerCore(loop::Loop* loop, const std::string& host, const ServerLimits& limits, std::string secret,
             std::shared_ptr<Upstream> upstream)
      : loop_(loop),
        host_(host),
        limits_(limits),
        secret_(std::move(secret)),
        upstream_(std::move(upstream)),
        keys_(limits, [this](std::unique_ptr<Waiter> waiter) { answer_ready_on_loop(std::move(waiter)); }),
        closed_future_(closed_.get_future().share()) {}

  // local: also listen on the side door for clients on this machine (local_socket.h).
  void start_on_loop(const sockaddr_storage& address, uint16_t requested_port, bool local);
  void close_all_on_loop();

  uint16_t port() const { return port_.load(); }
  const std::string& host() const { return host_; }
  std::shared_future<void> closed_future() const { return closed_future_; }
  ServerStats stats() const {
    ServerStats s;
    s.connections = connections_count_.load();
    s.peak_connections = peak_connections_.load();
    s.keys = keys_count_.load();
    s.bytes = bytes_count_.load();
    s.requests = requests_.load();
    s.reply_bytes = reply_bytes_.load();
    s.writes = writes_.load();
    s.dropped_connections = dropped_.load();
    s.denied_connections = denied_.load();
    s.refused_connections = refused_.load();
    return s;
  }

 private:
  static void on_connection(uv_stream_t* listener, int status);
  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_timer(uv_timer_t* timer);
  static void on_handshake_timer(uv_timer_t* timer);
  static void on_sweep(uv_timer_t* timer);
  static void on_relay_beat(uv_timer_t* timer);
  static void on_flush(uv_check_t* check);
  static void on_write(uv_write_t* req, int status);
  static void on_connection_closed(uv_handle_t* handle);
  static void on_own_handle_closed(uv_handle_t* handle);  // listeners_, timers

  void accept_on_loop(uv_stream_t* listener);
  void read_on_loop(Connection* conn, ssize_t nread, const uv_buf_t* buf);
  void handle_frame_on_loop(Connection* conn, const protocol::Frame& frame);
  void greet_on_loop(Connection* conn, const Request& request);
  void liveness_request_on_loop(Connection* conn, const Request& request);
  // A relay's: sends request up, and its answer back to conn when it comes; a GET
  // through the key's shared GET where it can (SharedGets).
  void forward_on_loop(Connection* conn, Request request);
  void ask_shared_on_loop(const std::string& key, uint64_t wait_ms);
  void shared_answered_on_loop(const std::string& key, const Reply& reply, bool connection_lost);
  // The store's reply, or the lost store, to request id of the connection serial, if
  // it is still open.
  void answer_forwarded_on_loop(uint64_t serial, uint32_t id, Op op, const Reply& reply, bool connection_lost);
  // A key the store itself writes (kRefusedKey, kDeniedKey): here, or in a relay, above.
  void note_on_loop(const char* key, const std::optional<std::string>& value);
  void sweep_on_loop();
  void deny_on_loop(Connection* conn, const Reply& reply);
  void turn_away_on_loop(Connection* conn, const Reply& reply);
  void refuse_on_loop(Connection* conn, const std::string& why);
  void publish_refusal_on_loop(const std::string& what);
  // What bounds the connections this store serves, measured at its start.
  void size_capacity_on_loop();
  void listen_locally_on_loop(const sockaddr_storage& bound);
  // A handle of the server's own, just initialised: it calls back into this server,
  // and ~Server waits for it to close (on_own_handle_closed).
  template <typename Handle>
  void own(Handle* handle) {
    handle->data = this;
    ++open_handles_;
  }
  void leave_greeting_on_loop(Connection* conn);
  void arm_handshake_timer_on_loop();
  void expire_handshakes_on_loop();
  void send_on_loop(Connection* conn, const Reply& reply, bool then_close = false);
  // An encoded reply into conn's outbox, written once the loop's I/O of this turn is done.
  void queue_on_loop(Connection* conn, std::string bytes, bool then_close = false);
  void write_on_loop(Connection* conn, bool then_close);
  // Writes the replies of at most `most` connections, first listed first.
  void flush_on_loop(size_t most);
  void answer_ready_on_loop(std::unique_ptr<Waiter> waiter);
  void arm_timer_on_loop();
  void expire_on_loop();
  void drop_on_loop(Connection* conn, const std::string& why);
  void close_on_loop(Connection* conn, const std::string& reason = kClosedReason);
  void handle_closed_on_loop();
  void update_stats_on_loop();
  std::string where() const {
    return concat(upstream_ ? "rendezvous relay on " : "rendezvous store on ", host_, ":", port_.load());
  }

  loop::Loop* loop_;
  std::string host_;
  ServerLimits limits_;
  const std::string secret_;  // "": clients need none
  // Set for a relay (relay.h): keys live above, and Liveness writes there.
  const std::shared_ptr<Upstream> upstream_;
  uv_timer_t relay_beat_timer_;  // a relay's heartbeats to its store
  SharedGets shared_gets_;       // a relay's
  std::atomic<uint16_t> port_{0};
  // Several, each with an accept queue of its own (listeners.h).
  std::vector<std::unique_ptr<uv_tcp_t>> listeners_;
  // The side door for clients on this machine (local_socket.h), if it has one.
  std::unique_ptr<uv_pipe_t> local_listener_;
  uv_timer_t timer_;
  // Connections not yet greeted, oldest first: every one has the same time to finish
  // the handshake, so one timer for the oldest serves them all.
  std::list<Connection*> greeting_;
  uv_timer_t handshake_timer_;
  uv_timer_t sweep_timer_;
  // Connections with replies to write, flushed after the loop's I/O callbacks (the
  // check phase), kFlushSlice at a time: a key that wakes 10,000 waiters is answered
  // over several turns, with the loop's timers and reads in between, not in one long
  // step. While some wait, the idle handle keeps the loop from sleeping in poll.
  std::list<Connection*> flush_;
  uv_check_t flush_check_;
  uv_idle_t flush_idle_;
  KeySpace keys_;
  KeySpaceSink key_sink_{keys_};
  Liveness liveness_{upstream_ ? static_cast<LivenessSink&>(*upstream_) : key_sink_, kSweepMs, limits_.log_losses,
                     limits_.on_silent_loss};
  std::unordered_set<Connection*> connections_;          // refused ones included, until they close
  std::unordered_map<uint64_t, Connection*> by_serial_;  // a relay's: whom its answers from above are for
  uint64_t next_serial_ = 1;
  size_t refused_open_ = 0;  // of connections_, those refused
  // How many connections it serves: max_connections, or fewer where this process's
  // descriptor limit leaves less room; and what to tell those turned away.
  size_t capacity_ = 0;
  std::string capacity_why_;
  bool refusal_published_ = false;  // kRefusedKey is set
  size_t open_handles_ = 0;
  bool closing_ = false;
  std::shared_ptr<ServerCore> keep_alive_;
  std::promise<void> closed_;
  std::shared_future<void> closed_future_;

  std::atomic<size_t> connections_count_{0};
  std::atomic<size_t> peak_connections_{0};
  std::atomic<size_t> keys_count_{0};
  std::atomic<size_t> bytes_count_{0};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> reply_bytes_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> denied_{0};
  std::atomic<uint64_t> refused_{0};
};

void ServerCore::start_on_loop(const sockaddr_storage& address, uint16_t requested_port, bool local) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  keep_alive_ = shared_from_this();
  uv_timer_init(loop_->uv(), &timer_);
  own(&timer_);
  uv_timer_init(loop_->uv(), &handshake_timer_);
  own(&handshake_timer_);
  uv_timer_init(loop_->uv(), &sweep_timer_);
  own(&sweep_timer_);
  uv_check_init(loop_->uv(), &flush_check_);
  own(&flush_check_);
  uv_idle_init(loop_->uv(), &flush_idle_);
  own(&flush_idle_);
  uv_timer_init(loop_->uv(), &relay_beat_timer_);
  own(&relay_beat_timer_);
  if (upstream_) {
    // Watched by the store from the start, so that the ranks it carries are never
    // unwatched; a lost store closes everything.
    upstream_->on_lost([this](const std::string&) { close_all_on_loop(); });
    upstream_->beat(0);
    auto interval = static_cast<uint64_t>(upstream_->heartbeat_interval_ms());
    uv_timer_start(&relay_beat_timer_, &ServerCore::on_relay_beat, interval, interval);
  }

  std::vector<int> fds;
  int rc = bind_listeners(address, listeners_for(limits_.max_connections), &fds);
  for (int fd : fds) {
    auto listener = std::make_unique<uv_tcp_t>();
    uv_tcp_init(loop_->uv(), listener.get());
    own(listener.get());
    int opened = uv_tcp_open(listener.get(), fd);
    if (opened != 0) {
      close(fd);  // the handle did not take it
    } else {
      // The backlog is the kernel's cap (somaxconn) per listener.
      opened = uv_listen(reinterpret_cast<uv_stream_t*>(listener.get()), 65535, &ServerCore::on_connection);
    }
    if (opened != 0 && rc == 0) rc = opened;
    listeners_.push_back(std::move(listener));
  }
  if (rc != 0) {
    close_all_on_loop();
    const char* hint = "check the address and port";
    Status status = Status::kTransport;
    if (rc == UV_EADDRINUSE) {
      hint = "another process (an earlier job?) holds the port; pick another port or stop that process";
    } else if (rc == UV_EADDRNOTAVAIL) {
      hint = "the address is not one of this machine's; use one of its addresses, or 0.0.0.0";
      status = Status::kInvalidArgument;
    } else if (rc == UV_EACCES) {
      hint = "ports below 1024 need privileges; use a higher port";
    }
    fail(status, concat("rendezvous store: cannot listen on ", host_, ":", requested_port, ": ", uv_strerror(rc), " (",
                        uv_err_name(rc), "); ", hint));
  }
  sockaddr_storage bound{};
  int length = sizeof(bound);
  uv_tcp_getsockname(listeners_.front().get(), reinterpret_cast<sockaddr*>(&bound), &length);
  port_ = socket_address_port(bound);
  if (local) listen_locally_on_loop(bound);
  size_capacity_on_loop();
  log::info(where(), ": listening", upstream_ ? concat(", in front of ", upstream_->address()) : std::string());
}

void ServerCore::listen_locally_on_loop(const sockaddr_storage& bound) {
  // The same backlog as a TCP listener's: a client that finds it full takes TCP.
  int fd = listen_local(bound, 65535);
  if (fd == -EINVAL) return;  // listening on every address: no name to give
  if (fd < 0) {
    log::warn(where(), ": no Unix socket for the clients on this machine (", std::strerror(-fd),
              "); they connect over TCP");
    return;
  }
  local_listener_ = std::make_unique<uv_pipe_t>();
  uv_pipe_init(loop_->uv(), local_listener_.get(), 0);
  own(local_listener_.get());
  int rc = uv_pipe_open(local_listener_.get(), fd);
  if (rc != 0) close(fd);  // the handle did not take it
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(local_listener_.get()), 65535, &ServerCore::on_connection);
  if (rc != 0) {
    log::warn(where(), ": no Unix socket for the clients on this machine (", uv_strerror(rc),
              "); they connect over TCP");
  }
}

void ServerCore::size_capacity_on_loop() {
  capacity_ = limits_.max_connections;
  capacity_why_ = concat("it serves max_connections (", limits_.max_connections,
                         ") connections already; raise the limit or use fewer clients");
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  size_t open = 0;
  if (DIR* fds = opendir("/proc/self/fd")) {
    while (dirent* entry = readdir(fds)) open += entry->d_name[0] != '.';
    closedir(fds);
  }
  size_t room = limit.rlim_cur > open + kDescriptorHeadroom ? limit.rlim_cur - open - kDescriptorHeadroom : 0;
  if (room >= capacity_) return;
  capacity_ = room;
  capacity_why_ = concat("its process may hold ", limit.rlim_cur, " descriptors (ulimit -n) and had ", open,
                         " open at its start, so it serves ", room, " connections; raise ulimit -n where the store ",
                         "runs (a process here holds at most 20,000) or use fewer clients");
}

void ServerCore::on_connection(uv_stream_t* listener, int status) {
  auto* self = static_cast<ServerCore*>(listener->data);
  if (status < 0) {
    log::warn(self->where(), ": accepting a connection failed: ", uv_strerror(status));
    // Out of descriptors: libuv accepted and closed what it could not keep. Someone
    // could not connect; ranks waiting in a meeting must not wait for them in vain.
    if (status == UV_EMFILE || status == UV_ENFILE) {
      self->publish_refusal_on_loop(concat("a connection: the store's process ran out of file descriptors (",
                                           uv_strerror(status), "); raise ulimit -n or use several stores"));
    }
    return;
  }
  self->accept_on_loop(listener);
}

void ServerCore::accept_on_loop(uv_stream_t* listener) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  auto* conn = new Connection(this, secret_);
  const bool local = listener->type == UV_NAMED_PIPE;
  if (local) {
    uv_pipe_init(loop_->uv(), &conn->socket.pipe, 0);
  } else {
    uv_tcp_init(loop_->uv(), &conn->socket.tcp);
  }
  conn->socket.handle.data = conn;
  ++open_handles_;
  if (uv_accept(listener, &conn->socket.stream) != 0) {
    conn->closing = true;
    uv_close(&conn->socket.handle, &ServerCore::on_connection_closed);
    return;
  }
  sockaddr_storage peer{};
  int length = sizeof(peer);
  uv_os_fd_t fd = -1;
  if (local && uv_fileno(&conn->socket.handle, &fd) == 0) {
    conn->peer = local_peer_text(fd);
  } else if (!local && uv_tcp_getpeername(&conn->socket.tcp, reinterpret_cast<sockaddr*>(&peer), &length) == 0) {
    conn->peer = socket_address_text(peer);
  } else {
    conn->peer = "an unknown peer";
  }
  if (closing_) {
    conn->closing = true;
    uv_close(&conn->socket.handle, &ServerCore::on_connection_closed);
    return;
  }
  // Over capacity, it is still read, so that its first frame is answered with why.
  if (connections_.size() - refused_open_ >= capacity_) {
    refuse_on_loop(conn, capacity_why_);
    ++refused_open_;
  }
  connections_.insert(conn);
  conn->serial = next_serial_++;
  if (upstream_) by_serial_.emplace(conn->serial, conn);
  update_stats_on_loop();
  conn->handshake_deadline = uv_now(loop_->uv()) + limits_.handshake_timeout_ms;
  conn->greeting_entry = greeting_.insert(greeting_.end(), conn);
  conn->in_greeting = true;
  if (greeting_.size() == 1) arm_handshake_timer_on_loop();
  if (!local) uv_tcp_nodelay(&conn->socket.tcp, 1);
  uv_read_start(&conn->socket.stream, &ServerCore::on_alloc, &ServerCore::on_read);
}

void ServerCore::on_alloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  *buf = static_cast<Connection*>(handle->data)->core->loop_->read_buffer();
}

void ServerCore::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  auto* conn = static_cast<Connection*>(stream->data);
  conn->core->read_on_loop(conn, nread, buf);
}

void ServerCore::read_on_loop(Connection* conn, ssize_t nread, const uv_buf_t* buf) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  // After a stall libuv runs the late sweep first as a rule, but not always: what
  // arrived meanwhile (a heartbeat, a close) must not be read before the sweep has
  // taken the stall into account, or a close would be told before the stall's verdict.
  if (liveness_.sweep_overdue(uv_now(loop_->uv()))) sweep_on_loop();
  if (conn->closing) return;
  if (nread < 0) {
    if (conn->decoder.buffered() > 0) {
      drop_on_loop(conn, concat("the connection ended in the middle of a frame (", conn->decoder.buffered(),
                                " bytes of it received; ", uv_strerror(static_cast<int>(nread)), ")"));
    } else {
      if (nread != UV_EOF)
        log::debug(where(), ": connection from ", conn->peer, " failed: ", uv_strerror(static_cast<int>(nread)));
      close_on_loop(conn);
    }
    return;
  }
  // A peer that sends requests but never reads the replies would grow this queue.
  size_t queued = uv_stream_get_write_queue_size(&conn->socket.stream);
  if (queued > 4 * limits_.max_frame_bytes) {
    drop_on_loop(conn, concat("it does not read its replies (", queued, " bytes queued)"));
    return;
  }
  try {
    conn->decoder.feed(buf->base, static_cast<size_t>(nread));
    while (!conn->closing) {
      auto frame = conn->decoder.next();
      if (!frame) break;
      handle_frame_on_loop(conn, *frame);
    }
  } catch (const ProtocolError& e) {
    drop_on_loop(conn, e.what());
  }
}

void ServerCore::handle_frame_on_loop(Connection* conn, const protocol::Frame& frame) {
  if (conn->turned_away) return;  // frames it sent after the one answered are not read
  Request request = protocol::decode_request(frame);
  ++requests_;
  if (conn->refused) {
    Reply reply;
    reply.op = request.op;
    reply.id = request.id;
    reply.status = Status::kTransport;
    reply.message = concat("the store turned this connection away: ", capacity_why_);
    turn_away_on_loop(conn, reply);
    return;
  }
  liveness_.heard_from(conn, uv_now(loop_->uv()));
  if (!conn->greeted) {
    if (request.op != Op::kHello) {
      throw ProtocolError(
          concat("sent ", protocol::op_name(request.op), " before completing HELLO (is it a tutti ", "store client?)"));
    }
    greet_on_loop(conn, request);
    return;
  }
  if (request.op == Op::kHello) throw ProtocolError("sent HELLO a second time");
  if (request.op == Op::kHeartbeat || request.op == Op::kMember || request.op == Op::kRoster ||
      request.op == Op::kRelayJoin || request.op == Op::kRelayLeave) {
    liveness_request_on_loop(conn, request);
    return;
  }
  if (upstream_) {
    forward_on_loop(conn, std::move(request));
    update_stats_on_loop();
    return;
  }

  std::optional<Reply> reply = keys_.handle(request);
  if (!reply) {
    // A relay waits for the ranks it carries, each as many as a rank may.
    size_t most = limits_.max_waiters_per_connection * (1 + conn->relayed);
    if (conn->waiters.size() >= most) {
      reply = Reply{};
      reply->op = request.op;
      reply->id = request.id;
      reply->status = Status::kInvalidArgument;
      reply->message = concat("this connection has max_waiters_per_connection (", limits_.max_waiters_per_connection,
                              conn->relayed ? concat(" for each of the ", conn->relayed, " ranks it relays") : "",
                              ") requests waiting already; wait for fewer keys at once or raise the limit");
    } else {
      uint64_t wait_ms = static_cast<uint64_t>(std::min(request.number, kMaxWaitMs));
      conn->waiters.insert(keys_.park(conn, request, uv_now(loop_->uv()) + wait_ms));
      arm_timer_on_loop();
    }
  }
  // Stats first: a caller that has its reply then sees them.
  update_stats_on_loop();
  if (reply) send_on_loop(conn, *reply);
}

void ServerCore::greet_on_loop(Connection* conn, const Request& request) {
  if (request.number < protocol::kVersion) {
    throw ProtocolError(
        concat("its HELLO offers protocol version ", request.number, ", below ", static_cast<int>(protocol::kVersion)));
  }
  Reply reply;
  reply.op = Op::kHello;
  reply.id = request.id;
  reply.number = protocol::kVersion;
  reply.max_frame_bytes = static_cast<int64_t>(limits_.max_frame_bytes);
  reply.values = {concat("tutti store ", host_, ":", port_.load()), ""};
  switch (conn->handshake->on_hello(request, &reply)) {
    case ServerHandshake::Step::kDenied: deny_on_loop(conn, reply); return;
    case ServerHandshake::Step::kChallenged: break;
    case ServerHandshake::Step::kAccepted:
      conn->greeted = true;
      conn->handshake.reset();
      conn->identity = request.value;
      leave_greeting_on_loop(conn);
      conn->decoder.set_max_frame_bytes(limits_.max_frame_bytes);
      log::debug(where(), ": ", conn->peer, " is \"", request.value, "\"");
      break;
  }
  send_on_loop(conn, reply);
}

void ServerCore::liveness_request_on_loop(Connection* conn, const Request& request) {
  Reply reply;
  reply.op = request.op;
  reply.id = request.id;
  if (request.op == Op::kHeartbeat) {
    liveness_.heartbeat(conn, conn->identity, conn->peer, request.number, request.value, uv_now(loop_->uv()));
    if (request.with_value) {
      reply.with_value = true;
      reply.values = {std::to_string(upstream_ ? upstream_->store_clock_us() : wall_clock_us())};
    }
    if (liveness_.watching() && !uv_is_active(reinterpret_cast<uv_handle_t*>(&sweep_timer_))) {
      uv_timer_start(&sweep_timer_, &ServerCore::on_sweep, kSweepMs, kSweepMs);
    }
  } else if (request.op == Op::kRoster) {
    reply.values = liveness_.roster(request.keys.at(0), uv_now(loop_->uv()));
  } else if (request.keys.at(0).empty() || request.keys[0].size() > limits_.max_key_bytes) {
    reply.status = Status::kInvalidArgument;
    reply.message =
        concat(protocol::op_name(request.op), " needs a key prefix of 1 to ", limits_.max_key_bytes, " bytes");
  } else if (request.op == Op::kRelayJoin || request.op == Op::kRelayLeave) {
    // From a relay in front of this one too: Liveness passes it on to the store above.
    conn->relayed = liveness_.relayed(conn, request.keys[0], request.number, request.op == Op::kRelayJoin);
  } else {
    liveness_.member(conn, request.keys[0], request.number);
    // This frame was heard before the connection was an entry of the roster.
    liveness_.heard_from(conn, uv_now(loop_->uv()));
  }
  send_on_loop(conn, reply);
}

void ServerCore::forward_on_loop(Connection* conn, Request request) {
  if (request.op == Op::kGet && request.number > 0) {
    uint64_t wait_ms = static_cast<uint64_t>(std::min(request.number, kMaxWaitMs));
    SharedGets::Asker asker{conn->serial, request.id, uv_now(loop_->uv()) + wait_ms,
                            std::min<uint64_t>(wait_ms / 100, 1000)};
    switch (shared_gets_.join(request.keys[0], asker)) {
      case SharedGets::Join::kJoined: return;
      case SharedGets::Join::kAskUp: return ask_shared_on_loop(request.keys[0], wait_ms);
      case SharedGets::Join::kAlone: break;
    }
  }
  uint64_t serial = conn->serial;
  uint32_t id = request.id;
  Op op = request.op;
  upstream_->forward(std::move(request),
                     [weak = weak_from_this(), serial, id, op](const Reply& reply, bool connection_lost) {
                       auto core = weak.lock();
                       if (core) core->answer_forwarded_on_loop(serial, id, op, reply, connection_lost);
                     });
}

void ServerCore::ask_shared_on_loop(const std::string& key, uint64_t wait_ms) {
  Request get;
  get.op = Op::kGet;
  get.keys = {key};
  get.number = static_cast<int64_t>(wait_ms);
  upstream_->forward(std::move(get), [weak = weak_from_this(), key](const Reply& reply, bool connection_lost) {
    auto core = weak.lock();
    if (core && !core->closing_) core->shared_answered_on_loop(key, reply, connection_lost);
  });
}

void ServerCore::shared_answered_on_loop(const std::string& key, const Reply& reply, bool connection_lost) {
  uint64_t now = uv_now(loop_->uv());
  uint64_t next = 0;
  bool timed_out = !connection_lost && reply.status == Status::kTimeout;
  for (const SharedGets::Asker& asker :
       timed_out ? shared_gets_.timed_out(key, now, &next) : shared_gets_.answered(key)) {
    answer_forwarded_on_loop(asker.serial, asker.id, Op::kGet, reply, connection_lost);
  }
  if (next > 0) ask_shared_on_loop(key, next > now ? next - now : 1);
}

void ServerCore::answer_forwarded_on_loop(uint64_t serial, uint32_t id, Op op, const Reply& reply,
                                          bool connection_lost) {
  if (closing_) return;
  auto it = by_serial_.find(serial);
  if (it == by_serial_.end()) return;  // it closed meanwhile
  if (connection_lost) {
    Reply lost;
    lost.op = op;
    lost.id = id;
    lost.status = Status::kPeerLost;
    lost.message = concat("the relay lost its store: ", reply.message);
    return send_on_loop(it->second, lost);
  }
  // The store answered this very request (its client checks the op), under the id the
  // relay gave it.
  queue_on_loop(it->second, protocol::encode(reply, id));
}

void ServerCore::note_on_loop(const char* key, const std::optional<std::string>& value) {
  Request request;
  request.op = value ? Op::kSet : Op::kDelete;
  request.keys = {key};
  if (value) request.value = *value;
  if (upstream_) {
    upstream_->forward(std::move(request), [](const Reply&, bool) {});
  } else {
    keys_.handle(request);
  }
}

void ServerCore::on_relay_beat(uv_timer_t* timer) {
  auto* self = static_cast<ServerCore*>(timer->data);
  self->upstream_->beat(self->liveness_.watched_count());
}

void ServerCore::on_sweep(uv_timer_t* timer) { static_cast<ServerCore*>(timer->data)->sweep_on_loop(); }

void ServerCore::sweep_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  for (const void* silent : liveness_.sweep(uv_now(loop_->uv()))) {
    auto* conn = const_cast<Connection*>(static_cast<const Connection*>(silent));
    log::warn(where(), ": closing the connection from ", conn->peer, " (", conn->identity, "): it is declared lost");
    close_on_loop(conn);
  }
  if (!liveness_.watching()) uv_timer_stop(&sweep_timer_);
}

void ServerCore::deny_on_loop(Connection* conn, const Reply& reply) {
  log::warn(where(), ": denied the connection from ", conn->peer, ": ", conn->handshake->why());
  note_on_loop(kDeniedKey, concat(wall_clock_ms(), "\n", conn->peer, ": ", conn->handshake->why()));
  ++denied_;
  ++dropped_;
  turn_away_on_loop(conn, reply);
}

void ServerCore::turn_away_on_loop(Connection* conn, const Reply& reply) {
  conn->turned_away = true;
  leave_greeting_on_loop(conn);
  // Nothing more is read from it; it closes once the answer is written, so that the
  // client learns why instead of seeing a bare close.
  uv_read_stop(&conn->socket.stream);
  send_on_loop(conn, reply, /*then_close=*/true);
}

void ServerCore::refuse_on_loop(Connection* conn, const std::string& why) {
  uint64_t refused = ++refused_;
  // The first refusals, then one line per thousand: a burst of thousands is one story.
  if (refused <= 3 || refused % 1000 == 0) {
    log::warn(where(), ": refusing the connection from ", conn->peer, ": ", why, " (", refused,
              " refused so far); ranks waiting in a meeting are told");
  }
  publish_refusal_on_loop(concat("the connection from ", conn->peer, ": ", why));
  conn->refused = true;
}

void ServerCore::publish_refusal_on_loop(const std::string& what) {
  // The first refusal of a spell without room is the one to report.
  if (refusal_published_) return;
  refusal_published_ = true;
  note_on_loop(kRefusedKey, what);
}

void ServerCore::leave_greeting_on_loop(Connection* conn) {
  if (!conn->in_greeting) return;
  bool was_oldest = conn->greeting_entry == greeting_.begin();
  greeting_.erase(conn->greeting_entry);
  conn->in_greeting = false;
  if (was_oldest) arm_handshake_timer_on_loop();
}

void ServerCore::arm_handshake_timer_on_loop() {
  if (closing_) return;
  if (greeting_.empty()) {
    uv_timer_stop(&handshake_timer_);
    return;
  }
  uint64_t next = greeting_.front()->handshake_deadline;
  uint64_t now = uv_now(loop_->uv());
  uv_timer_start(&handshake_timer_, &ServerCore::on_handshake_timer, next > now ? next - now : 0, 0);
}

void ServerCore::on_handshake_timer(uv_timer_t* timer) {
  static_cast<ServerCore*>(timer->data)->expire_handshakes_on_loop();
}

void ServerCore::expire_handshakes_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  uint64_t now = uv_now(loop_->uv());
  while (!greeting_.empty() && greeting_.front()->handshake_deadline <= now) {
    Connection* conn = greeting_.front();
    size_t partial = conn->decoder.buffered();
    drop_on_loop(conn,
                 concat("it did not finish the handshake within handshake_timeout_ms (", limits_.handshake_timeout_ms,
                        " ms; ", partial ? concat("sent ", partial, " bytes of a frame") : std::string("sent nothing"),
                        "); a tutti client sends HELLO at once, so it is not one, or it hung"));
  }
  arm_handshake_timer_on_loop();
}

void ServerCore::send_on_loop(Connection* conn, const Reply& reply, bool then_close) {
  if (conn->closing) return;
  queue_on_loop(conn, protocol::encode(reply), then_close);
}

void ServerCore::queue_on_loop(Connection* conn, std::string bytes, bool then_close) {
  if (conn->closing) return;
  reply_bytes_.fetch_add(bytes.size(), std::memory_order_relaxed);
  if (conn->outbox.empty()) {
    conn->outbox = std::move(bytes);
  } else {
    conn->outbox += bytes;
  }
  if (then_close) return write_on_loop(conn, true);
  if (conn->in_flush) return;
  conn->in_flush = true;
  conn->flush_entry = flush_.insert(flush_.end(), conn);
  if (flush_.size() == 1) {
    uv_check_start(&flush_check_, &ServerCore::on_flush);
    // A reply made outside the poll phase (a timer's: a wait that timed out) would
    // otherwise wait in the outbox until the next I/O woke the loop from poll.
    uv_idle_start(&flush_idle_, [](uv_idle_t*) {});
  }
}

void ServerCore::write_on_loop(Connection* conn, bool then_close) {
  writes_.fetch_add(1, std::memory_order_relaxed);
  if (!then_close) {
    // Most replies fit the socket at once: written here, they need no write request.
    // uv_try_write writes nothing while earlier writes wait in libuv's queue.
    uv_buf_t buf = uv_buf_init(conn->outbox.data(), static_cast<unsigned>(conn->outbox.size()));
    int written = uv_try_write(&conn->socket.stream, &buf, 1);
    if (written == static_cast<int>(conn->outbox.size()) || (written < 0 && written != UV_EAGAIN)) {
      // All of it, or a broken connection, which its read side sees. The buffer goes
      // too: the next reply's encoding is moved in whole (queue_on_loop).
      std::string().swap(conn->outbox);
      return;
    }
    if (written > 0) conn->outbox.erase(0, static_cast<size_t>(written));
  }
  auto* write = new WriteRequest;
  write->bytes.swap(conn->outbox);
  write->then_close = then_close;
  write->req.data = write;
  uv_buf_t buf = uv_buf_init(write->bytes.data(), static_cast<unsigned>(write->bytes.size()));
  int rc = uv_write(&write->req, &conn->socket.stream, &buf, 1, &ServerCore::on_write);
  // A failed write needs no action here: the read side sees the broken connection.
  if (rc != 0) {
    delete write;
    if (then_close) close_on_loop(conn);
  }
}

void ServerCore::on_flush(uv_check_t* check) { static_cast<ServerCore*>(check->data)->flush_on_loop(kFlushSlice); }

void ServerCore::flush_on_loop(size_t most) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  for (size_t written = 0; written < most && !flush_.empty(); ++written) {
    Connection* conn = flush_.front();
    flush_.pop_front();
    conn->in_flush = false;
    if (!conn->outbox.empty()) write_on_loop(conn, false);
  }
  if (flush_.empty()) {
    uv_check_stop(&flush_check_);
    uv_idle_stop(&flush_idle_);
  } else {
    uv_idle_start(&flush_idle_, [](uv_idle_t*) {});
  }
}

void ServerCore::on_write(uv_write_t* req, int) {
  std::unique_ptr<WriteRequest> write(static_cast<WriteRequest*>(req->data));
  if (write->then_close) {
    // The handle is still open here: libuv calls back every write before it closes.
    auto* conn = static_cast<Connection*>(req->handle->data);
    conn->core->close_on_loop(conn);
  }
}

void ServerCore::answer_ready_on_loop(std::unique_ptr<Waiter> waiter) {
  auto* conn = static_cast<Connection*>(waiter->owner);
  conn->waiters.erase(waiter.get());
  send_on_loop(conn, keys_.answer(*waiter, Status::kOk));
}

void ServerCore::arm_timer_on_loop() {
  auto next = keys_.next_deadline();
  if (!next) {
    uv_timer_stop(&timer_);
    return;
  }
  uint64_t now = uv_now(loop_->uv());
  uv_timer_start(&timer_, &ServerCore::on_timer, *next > now ? *next - now : 0, 0);
}

void ServerCore::on_timer(uv_timer_t* timer) { static_cast<ServerCore*>(timer->data)->expire_on_loop(); }

void ServerCore::expire_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  for (auto& waiter : keys_.take_expired(uv_now(loop_->uv()))) {
    auto* conn = static_cast<Connection*>(waiter->owner);
    conn->waiters.erase(waiter.get());
    send_on_loop(conn, keys_.answer(*waiter, Status::kTimeout));
  }
  arm_timer_on_loop();
}

void ServerCore::drop_on_loop(Connection* conn, const std::string& why) {
  log::warn(where(), ": dropping the connection from ", conn->peer, ": ", why);
  ++dropped_;
  close_on_loop(conn, concat("the store dropped its connection: ", why));
}

void ServerCore::close_on_loop(Connection* conn, const std::string& reason) {
  if (conn->closing) return;
  // Replies made before the close (a challenge before the frame that broke the rules)
  // still go; libuv writes at once what nothing queues before.
  if (!conn->outbox.empty()) write_on_loop(conn, false);
  if (conn->in_flush) {
    flush_.erase(conn->flush_entry);  // it is freed once closed; the list must not keep it
    conn->in_flush = false;
  }
  conn->closing = true;
  for (Waiter* waiter : conn->waiters) keys_.drop(waiter);
  conn->waiters.clear();
  // A store that is shutting down loses nobody: its clients learn that it went.
  if (!closing_) liveness_.closed(conn, reason, uv_now(loop_->uv()));
  leave_greeting_on_loop(conn);
  by_serial_.erase(conn->serial);
  if (connections_.erase(conn) == 1 && conn->refused) --refused_open_;
  if (refusal_published_ && connections_.size() - refused_open_ < capacity_) {
    // Room again: the refusal no longer holds for meetings still to come.
    note_on_loop(kRefusedKey, std::nullopt);
    refusal_published_ = false;
  }
  update_stats_on_loop();
  uv_close(&conn->socket.handle, &ServerCore::on_connection_closed);
}

void ServerCore::on_connection_closed(uv_handle_t* handle) {
  auto* conn = static_cast<Connection*>(handle->data);
  ServerCore* self = conn->core;
  delete conn;
  self->handle_closed_on_loop();
}

void ServerCore::on_own_handle_closed(uv_handle_t* handle) {
  static_cast<ServerCore*>(handle->data)->handle_closed_on_loop();
}

void ServerCore::handle_closed_on_loop() {
  if (--open_handles_ > 0 || !closing_) return;
  closed_.set_value();
  // Last: this may free *this.
  auto self = std::move(keep_alive_);
}

void ServerCore::close_all_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  if (closing_) return;
  flush_on_loop(SIZE_MAX);  // replies already made go before the farewells below
  closing_ = true;
  if (upstream_) upstream_->close();
  // Parked requests are told why, best effort: a write that would block is skipped,
  // since the connection closes right after and the client sees that anyway.
  for (auto& waiter : keys_.take_all()) {
    auto* conn = static_cast<Connection*>(waiter->owner);
    conn->waiters.erase(waiter.get());
    std::string bytes = protocol::encode(keys_.answer(*waiter, Status::kAborted));
    uv_buf_t buf = uv_buf_init(bytes.data(), static_cast<unsigned>(bytes.size()));
    uv_try_write(&conn->socket.stream, &buf, 1);
  }
  std::vector<Connection*> open(connections_.begin(), connections_.end());
  for (Connection* conn : open) close_on_loop(conn);
  for (auto& listener : listeners_)
    uv_close(reinterpret_cast<uv_handle_t*>(listener.get()), &ServerCore::on_own_handle_closed);
  if (local_listener_)
    uv_close(reinterpret_cast<uv_handle_t*>(local_listener_.get()), &ServerCore::on_own_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), &ServerCore::on_own_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&handshake_timer_), &ServerCore::on_own_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&sweep_timer_), &ServerCore::on_own_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&relay_beat_timer_), &ServerCore::on_own_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&flush_check_), &ServerCore::on_own_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&flush_idle_), &ServerCore::on_own_handle_closed);
}

void ServerCore::update_stats_on_loop() {
  connections_count_ = connections_.size();
  if (connections_.size() > peak_connections_.load(std::memory_order_relaxed)) peak_connections_ = connections_.size();
  keys_count_ = keys_.keys();
  bytes_count_ = keys_.bytes();
}

class ServerImpl final : public Server {
 public:
  ServerImpl(std::shared_ptr<loop::Loop> loop, std::shared_ptr<ServerCore> core)
      : loop_(std::move(loop)), core_(std::move(core)) {}

  ~ServerImpl() override {
    auto closed = core_->closed_future();
    bool posted = loop_->post([core = core_] { core->close_all_on_loop(); });
    if (posted && closed.wait_for(kCloseWait) != std::future_status::ready) {
      log::error("rendezvous store on ", core_->host(), ":", core_->port(), ": the event loop did not close the ",
                 "server within ", std::chrono::seconds(kCloseWait).count(), " s; leaving its handles to the loop");
    }
  }

  uint16_t port() const override { return core_->port(); }
  std::string host() const override { return core_->host(); }
  ServerStats stats() const override { return core_->stats(); }

 private:
  std::shared_ptr<loop::Loop> loop_;
  std::shared_ptr<ServerCore> core_;
};

}  // namespace

std::unique_ptr<Server> Server::start(std::shared_ptr<loop::Loop> loop, const std::string& host, uint16_t port,
                                      ServerLimits limits, std::string secret, std::shared_ptr<Upstream> upstream) {
  sockaddr_storage address{};
  std::string why = resolve_socket_address(host, port, /*passive=*/true, &address);
  if (!why.empty()) {
    fail(Status::kInvalidArgument, concat("rendezvous store: cannot listen on ", host, ":", port, ": ", why,
                                          "; use a name or address of this machine"));
  }
  const bool local = local_socket_enabled();
  auto core = std::make_shared<ServerCore>(loop.get(), host, limits, std::move(secret), std::move(upstream));
  loop->call([core, address, port, local] { core->start_on_loop(address, port, local); }, Deadline::after_ms(30000));
  return std::make_unique<ServerImpl>(std::move(loop), std::move(core));
}

}  // namespace tutti::store
