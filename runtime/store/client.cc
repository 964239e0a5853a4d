#include "runtime/store/client.h"


#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/common/log.h"
#include "runtime/store/handshake.h"
#include "runtime/store/protocol.h"
#include "runtime/store/socket_address.h"

namespace tutti::store {
namespace {

using protocol::Op;
using protocol::Reply;
using protocol::Request;

// A waiting request carries its timeout to the server, which answers kTimeout itself;
// the caller waits this much longer for that answer before giving up on its own.
constexpr auto kServerTimeoutGrace = std::chrono::milliseconds(250);
constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(500);
// How long ~Client waits for the loop to close the socket.
constexpr auto kCloseWait = std::chrono::seconds(5);
// A reply may be as big as the server allows; trust it up to this much.
constexpr size_t kMaxReplyBytes = size_t{1} << 30;

// How a call ended: the server's reply, or a local failure of the whole client.
struct Answer {
  enum class Source { kServer, kLost, kShutdown };
  Source source = Source::kServer;
  Reply reply;
};

// A call in flight: a user thread waits on promise, or, for calls made from the loop,
// callback takes the answer.
struct Pending {
  Op op;
  std::promise<Answer> promise;
  std::function<void(Answer)> callback;

  void deliver(Answer answer) {
    if (callback) {
      callback(std::move(answer));
    } else {
      promise.set_value(std::move(answer));
    }
  }
};

struct WriteRequest {
  uv_write_t req;
  std::string bytes;
};

// The client's loop-side half, shared with the user threads that call through it. It
// owns itself (keep_alive_) while its handle is open, for the same reason as the
// server's: a caller that stops waiting must not free what the loop still uses.
class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore(loop::Loop* loop, std::string address)
      : loop_(loop),
        address_(std::move(address)),
        decoder_(kMaxReplyBytes),
        connected_future_(connected_.get_future()),
        closed_future_(closed_.get_future().share()) {}

  const std::string& address() const { return address_; }
  std::future<int>& connected_future() { return connected_future_; }
  std::shared_future<void> closed_future() const { return closed_future_; }
  void set_max_frame_bytes(size_t bytes) { max_frame_bytes_ = bytes; }

  // User threads. Sends request and waits for its answer until wait_until.
  Answer call(Request request, std::chrono::steady_clock::time_point wait_until, bool* timed_out);
  // Any thread. Sends request; callback gets its answer once (see Client::Done).
  void call_async(Request request, std::function<void(Answer)> callback);
  void fail_all(Answer::Source source, Status status, const std::string& message);

  void connect_on_loop(const sockaddr_storage& address);
  void close_on_loop();

 private:
  static void on_connect(uv_connect_t* req, int status);
  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_closed(uv_handle_t* handle);

  void write_on_loop(std::string bytes);
  void read_on_loop(ssize_t nread, const uv_buf_t* buf);
  void complete_on_loop(Reply reply);
  void lose_on_loop(Status status, const std::string& message);
  void set_connected_on_loop(int status);

  loop::Loop* loop_;
  const std::string address_;

  std::mutex mutex_;
  std::unordered_map<uint32_t, std::shared_ptr<Pending>> pending_;  // guarded by mutex_
  std::optional<Answer> failed_;  // guarded by mutex_; set once, then every call gets it
  uint32_t next_id_ = 1;          // guarded by mutex_
  std::atomic<size_t> max_frame_bytes_{kMaxReplyBytes};

  // Loop thread only.
  uv_tcp_t tcp_;
  uv_connect_t connect_req_;
  bool opened_ = false;
  bool closing_ = false;
  bool connect_reported_ = false;
  protocol::Decoder decoder_;
  std::shared_ptr<ClientCore> keep_alive_;
  std::promise<int> connected_;
  std::future<int> connected_future_;
  std::promise<void> closed_;
  std::shared_future<void> closed_future_;
};

Answer failure(Answer::Source source, Status status, const std::string& message) {
  Answer answer;
  answer.source = source;
  answer.reply.status = status;
  answer.reply.message = message;
  return answer;
}

Answer ClientCore::call(Request request, std::chrono::steady_clock::time_point wait_until, bool* timed_out) {
  *timed_out = false;
  auto pending = std::make_shared<Pending>();
  pending->op = request.op;
  auto future = pending->promise.get_future();
  std::string bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return *failed_;
    request.id = next_id_++;
    if (next_id_ == 0) next_id_ = 1;
    bytes = protocol::encode(request);
    if (bytes.size() > max_frame_bytes_.load()) {
      return failure(Answer::Source::kServer, Status::kInvalidArgument,
                     concat("the request takes ", bytes.size(), " bytes, over the store's max_frame_bytes (",
                            max_frame_bytes_.load(), "); send less at once"));
    }
    pending_.emplace(request.id, pending);
  }
  auto self = shared_from_this();
  if (!loop_->post([self, bytes = std::move(bytes)]() mutable { self->write_on_loop(std::move(bytes)); })) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(request.id);
    return failure(Answer::Source::kShutdown, Status::kAborted, "the tutti event loop is stopping; no new work is accepted");
  }
  if (future.wait_until(wait_until) != std::future_status::ready) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (pending_.erase(request.id) == 1) {
      *timed_out = true;
      return Answer{};
    }
    // Answered while we gave up: the answer is on its way; take it.
  }
  return future.get();
}

void ClientCore::call_async(Request request, std::function<void(Answer)> callback) {
  auto pending = std::make_shared<Pending>();
  pending->op = request.op;
  pending->callback = std::move(callback);
  std::string bytes;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      request.id = next_id_++;
      if (next_id_ == 0) next_id_ = 1;
      bytes = protocol::encode(request);
      pending_.emplace(request.id, pending);
    }
  }
  if (bytes.empty()) {
    Answer failed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failed = *failed_;
    }
    pending->deliver(std::move(failed));
    return;
  }
  auto self = shared_from_this();
  if (!loop_->post([self, bytes = std::move(bytes)]() mutable { self->write_on_loop(std::move(bytes)); })) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_.erase(request.id);
    }
    pending->deliver(failure(Answer::Source::kShutdown, Status::kAborted,
                             "the tutti event loop is stopping; no new work is accepted"));
  }
}

void ClientCore::fail_all(Answer::Source source, Status status, const std::string& message) {
  std::unordered_map<uint32_t, std::shared_ptr<Pending>> failing;
  Answer answer = failure(source, status, message);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) failed_ = answer;
    failing.swap(pending_);
  }
  for (auto& [id, pending] : failing) pending->deliver(answer);
}

void ClientCore::connect_on_loop(const sockaddr_storage& address) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  keep_alive_ = shared_from_this();
  uv_tcp_init(loop_->uv(), &tcp_);
  tcp_.data = this;
  opened_ = true;
  uv_tcp_nodelay(&tcp_, 1);
  connect_req_.data = this;
  int rc = uv_tcp_connect(&connect_req_, &tcp_, reinterpret_cast<const sockaddr*>(&address), &ClientCore::on_connect);
  if (rc != 0) {
    set_connected_on_loop(rc);
    close_on_loop();
  }
}

void ClientCore::set_connected_on_loop(int status) {
  if (connect_reported_) return;
  connect_reported_ = true;
  connected_.set_value(status);
}

void ClientCore::on_connect(uv_connect_t* req, int status) {
  auto* self = static_cast<ClientCore*>(req->data);
  if (status != 0) {
    self->set_connected_on_loop(status);
    self->close_on_loop();
    return;
  }
  if (self->closing_) return;  // given up on while connecting
  uv_read_start(reinterpret_cast<uv_stream_t*>(&self->tcp_), &ClientCore::on_alloc, &ClientCore::on_read);
  self->set_connected_on_loop(0);
}

void ClientCore::on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) {
  // Shared by every client on this thread: libuv reads right after alloc, and the
  // decoder copies what it keeps.
  static thread_local char buffer[64 * 1024];
  *buf = uv_buf_init(buffer, sizeof(buffer));
}

void ClientCore::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  static_cast<ClientCore*>(stream->data)->read_on_loop(nread, buf);
}

void ClientCore::read_on_loop(ssize_t nread, const uv_buf_t* buf) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  if (closing_) return;
  if (nread < 0) {
    lose_on_loop(Status::kPeerLost,
                 concat("lost the connection to the rendezvous store at ", address_,
                        " (did the process hosting it, rank 0 or tutti launch, exit?)"));
    return;
  }
  try {
    decoder_.feed(buf->base, static_cast<size_t>(nread));
    while (!closing_) {
      auto frame = decoder_.next();
      if (!frame) break;
      complete_on_loop(protocol::decode_reply(*frame));
    }
  } catch (const protocol::ProtocolError& e) {
    lose_on_loop(Status::kTransport, concat("the rendezvous store at ", address_, " sent a bad reply (", e.what(),
                                            "); is the address that of a tutti store of this release?"));
  }
}

void ClientCore::complete_on_loop(Reply reply) {
  std::shared_ptr<Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(reply.id);
    if (it == pending_.end()) return;  // its caller gave up waiting
    if (it->second->op != reply.op) {
      throw protocol::ProtocolError(concat("a ", protocol::op_name(reply.op), " reply to a ",
                                           protocol::op_name(it->second->op), " request"));
    }
    pending = std::move(it->second);
    pending_.erase(it);
  }
  Answer answer;
  answer.reply = std::move(reply);
  pending->deliver(std::move(answer));
}

void ClientCore::write_on_loop(std::string bytes) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  if (closing_) return;  // whoever closed has failed the call already
  auto* write = new WriteRequest;
  write->bytes = std::move(bytes);
  write->req.data = write;
  uv_buf_t buf = uv_buf_init(write->bytes.data(), static_cast<unsigned>(write->bytes.size()));
  int rc = uv_write(&write->req, reinterpret_cast<uv_stream_t*>(&tcp_), &buf, 1, &ClientCore::on_write);
  if (rc != 0) {
    delete write;
    lose_on_loop(Status::kPeerLost, concat("lost the connection to the rendezvous store at ", address_, " (",
                                           uv_strerror(rc), "; did the process hosting it, rank 0 or tutti launch, exit?)"));
  }
}

void ClientCore::on_write(uv_write_t* req, int) { delete static_cast<WriteRequest*>(req->data); }

void ClientCore::lose_on_loop(Status status, const std::string& message) {
  fail_all(Answer::Source::kLost, status, message);
  close_on_loop();
}

void ClientCore::close_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  if (closing_) return;
  closing_ = true;
  if (!opened_) {
    closed_.set_value();
    return;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &ClientCore::on_closed);
}

void ClientCore::on_closed(uv_handle_t* handle) {
  auto* self = static_cast<ClientCore*>(handle->data);
  self->closed_.set_value();
  // Last: this may free *self.
  auto keep = std::move(self->keep_alive_);
}

// "\"a\"", "\"a\", \"b\"", "\"a\", \"b\", \"c\" and 7 more"
std::string describe_keys(const std::vector<std::string>& keys) {
  if (keys.empty()) return "(no keys)";
  std::string out;
  size_t shown = std::min<size_t>(keys.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += concat(i ? ", " : "", "\"", keys[i], "\"");
  if (keys.size() > shown) out += concat(" and ", keys.size() - shown, " more");
  return out;
}

class ClientImpl final : public Client {
 public:
  ClientImpl(std::shared_ptr<loop::Loop> loop, std::shared_ptr<ClientCore> core)
      : loop_(std::move(loop)), core_(std::move(core)) {}

  ~ClientImpl() override {
    shutdown(Status::kAborted, concat("the store client for ", core_->address(), " was closed"));
    if (loop_->on_loop_thread()) return;  // cannot wait for ourselves; the close is posted
    if (core_->closed_future().wait_for(kCloseWait) != std::future_status::ready) {
      log::error("store client for ", core_->address(), ": the event loop did not close the socket within ",
                 std::chrono::seconds(kCloseWait).count(), " s; leaving it to the loop");
    }
  }

  void hello(const std::string& secret, Deadline deadline);

  void set(const std::string& key, const std::string& value, Deadline deadline) override {
    Request r = make(Op::kSet, {key});
    r.value = value;
    run("set", r, deadline, false);
  }
  std::string get(const std::string& key, Deadline deadline) override {
    return run("get", make(Op::kGet, {key}), deadline, true).values.at(0);
  }
  int64_t add(const std::string& key, int64_t delta, Deadline deadline) override {
    Request r = make(Op::kAdd, {key});
    r.number = delta;
    return run("add", r, deadline, false).number;
  }
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired,
                          Deadline deadline) override {
    Request r = make(Op::kCompareSet, {key});
    r.expected = expected;
    r.value = desired;
    return run("compare_set", r, deadline, false).values.at(0);
  }
  void wait_all(const std::vector<std::string>& keys, Deadline deadline) override {
    run("wait_all", make(Op::kWait, keys), deadline, true);
  }
  size_t wait_any(const std::vector<std::string>& keys, Deadline deadline) override {
    Request r = make(Op::kWait, keys);
    r.wait_any = true;
    Reply reply = run("wait_any", r, deadline, true);
    if (reply.number < 0 || static_cast<size_t>(reply.number) >= keys.size()) {
      fail(Status::kTransport, concat("store wait_any ", describe_keys(keys), " on ", address(),
                                      ": the store answered index ", reply.number, ", out of range"));
    }
    return static_cast<size_t>(reply.number);
  }
  std::vector<bool> check(const std::vector<std::string>& keys, Deadline deadline) override {
    Reply reply = run("check", make(Op::kCheck, keys), deadline, false);
    expect_count("check", keys, reply.flags.size());
    return reply.flags;
  }
  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values,
                 Deadline deadline) override {
    if (keys.size() != values.size()) {
      fail(Status::kInvalidArgument, concat("store multi_set ", describe_keys(keys), " on ", address(), ": ",
                                            keys.size(), " keys but ", values.size(), " values; give one per key"));
    }
    Request r = make(Op::kMultiSet, keys);
    r.values = values;
    run("multi_set", r, deadline, false);
  }
  std::vector<std::string> multi_get(const std::vector<std::string>& keys, Deadline deadline) override {
    Reply reply = run("multi_get", make(Op::kMultiGet, keys), deadline, true);
    expect_count("multi_get", keys, reply.values.size());
    return std::move(reply.values);
  }
  bool remove(const std::string& key, Deadline deadline) override {
    return run("remove", make(Op::kDelete, {key}), deadline, false).number != 0;
  }

  void heartbeat(int64_t timeout_ms, const std::string& activity, Deadline deadline) override {
    Request r = make(Op::kHeartbeat, {});
    r.number = timeout_ms;
    r.value = activity;
    run("heartbeat", r, deadline, false);
  }
  void member(const std::string& prefix, int64_t rank, Deadline deadline) override {
    Request r = make(Op::kMember, {prefix});
    r.number = rank;
    run("member", r, deadline, false);
  }
  void get_async(const std::string& key, int64_t timeout_ms, Done done) override {
    Request r = make(Op::kGet, {key});
    r.number = timeout_ms;
    run_async("get", std::move(r), timeout_ms, std::move(done));
  }
  void heartbeat_async(int64_t timeout_ms, const std::string& activity, Done done) override {
    Request r = make(Op::kHeartbeat, {});
    r.number = timeout_ms;
    r.value = activity;
    run_async("heartbeat", std::move(r), timeout_ms, std::move(done));
  }

  void shutdown(Status status, const std::string& why) override {
    core_->fail_all(Answer::Source::kShutdown, status, why);
    auto core = core_;
    loop_->post([core] { core->close_on_loop(); });
  }

  std::string address() const override { return core_->address(); }

 private:
  static Request make(Op op, std::vector<std::string> keys) {
    Request r;
    r.op = op;
    r.keys = std::move(keys);
    return r;
  }

  // Sends r, waits, and returns an OK reply or throws the error it stands for.
  Reply run(const char* name, Request r, Deadline deadline, bool waits) {
    int64_t timeout_ms = deadline.remaining_ms();
    auto wait_until = deadline.at();
    if (waits) {
      r.number = timeout_ms;
      wait_until += kServerTimeoutGrace;
    }
    std::string what = concat("store ", name, " ", describe_keys(r.keys));
    bool timed_out = false;
    Answer answer = core_->call(std::move(r), wait_until, &timed_out);
    if (timed_out) fail(Status::kTimeout, concat(what, " timed out after ", timeout_ms, " ms on ", address()));
    Error error = failure_of(address(), what, timeout_ms, answer);
    if (error.status() != Status::kOk) throw error;
    return std::move(answer.reply);
  }

  // What a blocking call would throw for answer (status kOk: nothing).
  static Error failure_of(const std::string& address, const std::string& what, int64_t timeout_ms,
                          const Answer& answer) {
    const Reply& reply = answer.reply;
    if (answer.source == Answer::Source::kServer && reply.status == Status::kTimeout) {
      return Error(Status::kTimeout, concat(what, " timed out after ", timeout_ms, " ms on ", address));
    }
    if (reply.status == Status::kOk) return Error(Status::kOk, "");
    switch (answer.source) {
      case Answer::Source::kShutdown:
        return Error(reply.status, reply.message);
      case Answer::Source::kLost:
        return Error(reply.status, concat(what, ": ", reply.message));
      case Answer::Source::kServer:
        break;
    }
    if (reply.status == Status::kAborted) {
      // The server answers kAborted only as it closes: to this caller, its host left.
      return Error(Status::kPeerLost, concat(what, ": lost the connection to the rendezvous store at ", address,
                                             " (did the process hosting it, rank 0 or tutti launch, exit?)"));
    }
    return Error(reply.status, concat(what, " on ", address, ": ", reply.message));
  }

  void run_async(const char* name, Request r, int64_t timeout_ms, Done done) {
    std::string what = concat("store ", name, " ", describe_keys(r.keys));
    core_->call_async(std::move(r), [address = address(), what, timeout_ms, done = std::move(done)](Answer answer) {
      Error error = failure_of(address, what, timeout_ms, answer);
      done(error.status(), error.what(), answer.reply.values.empty() ? std::string() : answer.reply.values[0]);
    });
  }

  void expect_count(const char* name, const std::vector<std::string>& keys, size_t got) {
    if (got != keys.size()) {
      fail(Status::kTransport, concat("store ", name, " ", describe_keys(keys), " on ", address(), ": the store answered ",
                                      got, " entries for ", keys.size(), " keys"));
    }
  }

  std::shared_ptr<loop::Loop> loop_;
  std::shared_ptr<ClientCore> core_;
};

void ClientImpl::hello(const std::string& secret, Deadline deadline) {
  std::string where = concat("rendezvous store at ", address());
  ClientHandshake handshake(secret, where);
  int64_t timeout_ms = deadline.remaining_ms();
  // One HELLO, or two when the store challenges this client; both within the deadline.
  auto say_hello = [&](std::string auth) {
    Request r = make(Op::kHello, {});
    r.number = protocol::kVersion;
    r.value = process_identity();
    r.expected = std::move(auth);
    bool timed_out = false;
    Answer answer = core_->call(std::move(r), deadline.at(), &timed_out);
    if (timed_out) {
      fail(Status::kTimeout, concat(where, ": no answer to the handshake within ", timeout_ms,
                                    " ms; is the address that of a tutti store?"));
    }
    const Reply& reply = answer.reply;
    if (answer.source == Answer::Source::kLost) {
      fail(Status::kTransport, concat(where, " closed the connection during the handshake; it may be over its ",
                                      "max_connections or not a tutti store (see its log)"));
    }
    if (reply.status == Status::kDenied) fail(Status::kDenied, concat(where, " denied this process: ", reply.message));
    if (reply.status != Status::kOk) fail(Status::kTransport, concat(where, " refused the handshake: ", reply.message));
    return answer.reply;
  };
  Reply reply = say_hello(handshake.first_auth());
  if (auto proof = handshake.on_first_reply(reply)) handshake.on_second_reply(say_hello(std::move(*proof)));
  if (reply.max_frame_bytes > 0) core_->set_max_frame_bytes(static_cast<size_t>(reply.max_frame_bytes));
}

bool retryable(int rc) {
  return rc == UV_ECONNREFUSED || rc == UV_ENETUNREACH || rc == UV_EHOSTUNREACH || rc == UV_ETIMEDOUT ||
         rc == UV_ECONNRESET || rc == UV_ECONNABORTED;
}

// How often a connect given a `cancelled` asks it.
constexpr auto kCancelPoll = std::chrono::milliseconds(50);

[[noreturn]] void give_up_cancelled(const std::string& address) {
  fail(Status::kAborted, concat("connecting to the rendezvous store at ", address, " was given up (the init was aborted)"));
}

// Until the connection attempt has an outcome (true) or the deadline passes (false),
// asking `cancelled` as it goes.
bool wait_connected(ClientCore& core, Deadline deadline, const std::function<bool()>& cancelled) {
  if (!cancelled) return core.connected_future().wait_until(deadline.at()) == std::future_status::ready;
  while (!cancelled()) {
    auto slice = std::min(deadline.at(), std::chrono::steady_clock::now() + kCancelPoll);
    if (core.connected_future().wait_until(slice) == std::future_status::ready) return true;
    if (deadline.expired()) return false;
  }
  return false;
}

void sleep_unless_cancelled(std::chrono::steady_clock::duration pause, const std::function<bool()>& cancelled) {
  auto until = std::chrono::steady_clock::now() + pause;
  while (std::chrono::steady_clock::now() < until && !(cancelled && cancelled())) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(kCancelPoll, until - std::chrono::steady_clock::now()));
  }
}

}  // namespace

std::unique_ptr<Client> Client::connect(std::shared_ptr<loop::Loop> loop, const std::string& host, uint16_t port,
                                        Deadline deadline, const std::string& secret,
                                        const std::function<bool()>& cancelled) {
  const std::string address = concat(host, ":", port);
  sockaddr_storage socket_address{};
  std::string why = resolve_socket_address(host, port, /*passive=*/false, &socket_address);
  if (!why.empty()) {
    fail(Status::kTransport, concat("rendezvous store at ", address, ": ", why, "; check the address"));
  }
  auto start = std::chrono::steady_clock::now();
  auto backoff = std::chrono::duration_cast<std::chrono::steady_clock::duration>(kFirstBackoff);
  int tries = 0;
  int last = UV_ETIMEDOUT;
  while (true) {
    ++tries;
    auto core = std::make_shared<ClientCore>(loop.get(), address);
    if (!loop->post([core, socket_address] { core->connect_on_loop(socket_address); })) {
      fail(Status::kAborted, "the tutti event loop is stopping; no new work is accepted");
    }
    if (!wait_connected(*core, deadline, cancelled)) {
      loop->post([core] { core->close_on_loop(); });
      if (cancelled && cancelled()) give_up_cancelled(address);
      last = UV_ETIMEDOUT;
      break;
    }
    last = core->connected_future().get();
    if (last == 0) {
      auto client = std::make_unique<ClientImpl>(loop, core);
      client->hello(secret, deadline);
      return client;
    }
    if (!retryable(last)) {
      fail(Status::kTransport, concat("rendezvous store at ", address, ": cannot connect: ", uv_strerror(last),
                                      " (", uv_err_name(last), "); check the address"));
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline.at()) break;
    sleep_unless_cancelled(std::min(backoff, deadline.at() - now), cancelled);
    if (cancelled && cancelled()) give_up_cancelled(address);
    backoff = std::min(backoff * 2, std::chrono::duration_cast<std::chrono::steady_clock::duration>(kMaxBackoff));
    if (deadline.expired()) break;
  }
  auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  fail(Status::kTransport, concat("rendezvous store at ", address, ": ", uv_strerror(last), " after ", tries,
                                  " tries over ", spent, " ms; is rank 0 (or tutti launch) running, and is the ",
                                  "address right?"));
}

}  // namespace tutti::store
