#include "runtime/store/client.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/common/log.h"
#include "runtime/store/handshake.h"
#include "runtime/store/local_socket.h"
#include "runtime/store/protocol.h"
#include "runtime/store/socket_address.h"
#include "runtime/trace/trace.h"

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

// The answers a user thread waits for: a blocking call's one, or a pipeline's several.
// Only the answer the thread waits for wakes it: a pipeline's answers come in one read,
// and a thread woken for each of the others in turn would only go back to sleep.
struct Answers {
  static constexpr size_t kNone = SIZE_MAX;
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::optional<Answer>> slots;  // guarded by mutex
  size_t awaited = kNone;                    // guarded by mutex: the slot a thread sleeps on
};

// A call in flight: a user thread waits for its slot in answers, or, for calls made
// from the loop, callback takes the answer.
struct Pending {
  Op op;
  std::shared_ptr<Answers> answers;
  size_t slot = 0;
  std::function<void(Answer)> callback;

  void deliver(Answer answer) {
    if (callback) {
      callback(std::move(answer));
      return;
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(answers->mutex);
      answers->slots[slot] = std::move(answer);
      wake = answers->awaited == slot;
    }
    // After the unlock, so that the woken thread does not wake only to wait for the
    // mutex; answers is this Pending's, alive here whatever the waiter does.
    if (wake) answers->arrived.notify_all();
  }
};

struct WriteRequest {
  uv_write_t req;
  std::string bytes;
};

// The client's loop-side half, shared with the user threads that call through it. It
// owns itself (keep_alive_) while its handle is open, for the same reason as the
// server's: a caller that stops waiting must not free what the loop still uses.
//
// Writes: a user thread writes its requests on the socket itself (non-blocking, under
// mutex_), which spares the loop a wake-up and a thread switch per request. What the
// socket does not take, and what code on the loop sends, waits in outbox_ for the
// loop, which writes it with libuv; while it does, user threads append to outbox_ too,
// so that bytes go out in the order they were sent. Calls made on the loop in one
// turn thus go out in one write.
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

  // User threads. Sends requests in one write; answers->slots[first + i] gets the
  // answer to requests[i], at once when the client has failed or a request breaks the
  // frame limit. Returns their ids, for forget().
  std::vector<uint32_t> send(std::vector<Request> requests, const std::shared_ptr<Answers>& answers, size_t first);
  // Any thread. Sends request; callback gets its answer once (see Client::Done).
  void call_async(Request request, std::function<void(Answer)> callback);
  // Stops waiting for the answer to id; false when it has come, or is being delivered.
  bool forget(uint32_t id);
  void fail_all(Answer::Source source, Status status, const std::string& message);

  void connect_on_loop(const sockaddr_storage& address);
  // Takes fd, a socket connected to the store's side door (local_socket.h).
  void open_local_on_loop(int fd);
  void close_on_loop();

 private:
  static void on_connect(uv_connect_t* req, int status);
  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_closed(uv_handle_t* handle);

  uint32_t next_id_locked();
  void write_locked(std::string bytes);
  void flush_on_loop();
  void read_on_loop(ssize_t nread, const uv_buf_t* buf);
  void complete_on_loop(Reply reply);
  void lose_on_loop(Status status, const std::string& message);
  void set_connected_on_loop(int status);
  void start_reading_on_loop();  // once connected

  loop::Loop* loop_;
  const std::string address_;

  std::mutex mutex_;
  std::unordered_map<uint32_t, std::shared_ptr<Pending>> pending_;  // guarded by mutex_
  std::optional<Answer> failed_;  // guarded by mutex_; set once, then every call gets it
  uint32_t next_id_ = 1;          // guarded by mutex_
  int fd_ = -1;                   // guarded by mutex_; the socket, while it is open
  std::string outbox_;            // guarded by mutex_; bytes for the loop to write
  bool loop_writing_ = false;     // guarded by mutex_; the loop owns the writes
  std::atomic<size_t> max_frame_bytes_{kMaxReplyBytes};

  // Loop thread only. TCP, or a Unix socket to a store on this machine.
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } socket_;
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

uint32_t ClientCore::next_id_locked() {
  uint32_t id = next_id_++;
  if (next_id_ == 0) next_id_ = 1;
  return id;
}

std::vector<uint32_t> ClientCore::send(std::vector<Request> requests, const std::shared_ptr<Answers>& answers,
                                       size_t first) {
  auto fill = [&](const Answer& answer) {
    std::lock_guard<std::mutex> lock(answers->mutex);
    for (size_t i = 0; i < requests.size(); ++i) answers->slots[first + i] = answer;
  };
  std::vector<uint32_t> ids;
  std::string bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) {
    fill(*failed_);
    return ids;
  }
  for (auto& request : requests) {
    request.id = next_id_locked();
    std::string frame = protocol::encode(request);
    if (frame.size() > max_frame_bytes_.load()) {
      fill(failure(Answer::Source::kServer, Status::kInvalidArgument,
                   concat("the request takes ", frame.size(), " bytes, over the store's max_frame_bytes (",
                          max_frame_bytes_.load(), "); send less at once")));
      return {};
    }
    bytes += frame;
    ids.push_back(request.id);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    auto pending = std::make_shared<Pending>();
    pending->op = requests[i].op;
    pending->answers = answers;
    pending->slot = first + i;
    pending_.emplace(ids[i], std::move(pending));
  }
  write_locked(std::move(bytes));
  return ids;
}

void ClientCore::call_async(Request request, std::function<void(Answer)> callback) {
  auto pending = std::make_shared<Pending>();
  pending->op = request.op;
  pending->callback = std::move(callback);
  std::optional<Answer> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) {
      failed = failed_;
    } else {
      request.id = next_id_locked();
      pending_.emplace(request.id, pending);
      write_locked(protocol::encode(request));
    }
  }
  if (failed) pending->deliver(std::move(*failed));
}

bool ClientCore::forget(uint32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.erase(id) == 1;
}

void ClientCore::write_locked(std::string bytes) {
  if (fd_ < 0) return;  // closed: whoever closed has failed the call already
  if (!loop_writing_ && !loop_->on_loop_thread()) {
    ssize_t sent = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent == static_cast<ssize_t>(bytes.size())) return;
    // A broken connection: its read side fails every call. A full socket (EAGAIN):
    // the loop writes the rest once it drains.
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;
    if (sent > 0) bytes.erase(0, static_cast<size_t>(sent));
  }
  outbox_ += bytes;
  if (loop_writing_) return;
  loop_writing_ = true;
  auto self = shared_from_this();
  loop_->post([self] { self->flush_on_loop(); });
}

void ClientCore::flush_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  auto* write = new WriteRequest;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_ || outbox_.empty()) {
      loop_writing_ = false;
      delete write;
      return;
    }
    write->bytes.swap(outbox_);
  }
  write->req.data = write;
  uv_buf_t buf = uv_buf_init(write->bytes.data(), static_cast<unsigned>(write->bytes.size()));
  int rc = uv_write(&write->req, &socket_.stream, &buf, 1, &ClientCore::on_write);
  if (rc != 0) {
    delete write;
    lose_on_loop(Status::kPeerLost,
                 concat("lost the connection to the rendezvous store at ", address_, " (", uv_strerror(rc),
                        "; did the process hosting it, rank 0 or tutti launch, exit?)"));
  }
}

void ClientCore::on_write(uv_write_t* req, int status) {
  auto* self = static_cast<ClientCore*>(req->handle->data);
  delete static_cast<WriteRequest*>(req->data);
  // What was appended meanwhile goes next. A failed write needs nothing here: the
  // read side sees the broken connection.
  if (status == 0) self->flush_on_loop();
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
  uv_tcp_init(loop_->uv(), &socket_.tcp);
  socket_.handle.data = this;
  opened_ = true;
  uv_tcp_nodelay(&socket_.tcp, 1);
  connect_req_.data = this;
  int rc =
      uv_tcp_connect(&connect_req_, &socket_.tcp, reinterpret_cast<const sockaddr*>(&address), &ClientCore::on_connect);
  if (rc != 0) {
    set_connected_on_loop(rc);
    close_on_loop();
  }
}

void ClientCore::open_local_on_loop(int fd) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  keep_alive_ = shared_from_this();
  uv_pipe_init(loop_->uv(), &socket_.pipe, 0);
  socket_.handle.data = this;
  opened_ = true;
  int rc = uv_pipe_open(&socket_.pipe, fd);
  if (rc != 0) {
    close(fd);  // the handle did not take it
    set_connected_on_loop(rc);
    close_on_loop();
    return;
  }
  start_reading_on_loop();
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
  self->start_reading_on_loop();
}

void ClientCore::start_reading_on_loop() {
  uv_os_fd_t fd = -1;
  if (uv_fileno(&socket_.handle, &fd) == 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    fd_ = fd;
  }
  uv_read_start(&socket_.stream, &ClientCore::on_alloc, &ClientCore::on_read);
  set_connected_on_loop(0);
}

void ClientCore::on_alloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  *buf = static_cast<ClientCore*>(handle->data)->loop_->read_buffer();
}

void ClientCore::on_read(uv_stream_t* stream, ssize_t nread, const uv_buf_t* buf) {
  static_cast<ClientCore*>(stream->data)->read_on_loop(nread, buf);
}

void ClientCore::read_on_loop(ssize_t nread, const uv_buf_t* buf) {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  if (closing_) return;
  if (nread < 0) {
    lose_on_loop(Status::kPeerLost, concat("lost the connection to the rendezvous store at ", address_,
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
      throw protocol::ProtocolError(
          concat("a ", protocol::op_name(reply.op), " reply to a ", protocol::op_name(it->second->op), " request"));
    }
    pending = std::move(it->second);
    pending_.erase(it);
  }
  Answer answer;
  answer.reply = std::move(reply);
  pending->deliver(std::move(answer));
}

void ClientCore::lose_on_loop(Status status, const std::string& message) {
  fail_all(Answer::Source::kLost, status, message);
  close_on_loop();
}

void ClientCore::close_on_loop() {
  TUTTI_ASSERT_ON_LOOP(*loop_);
  if (closing_) return;
  closing_ = true;
  {
    // From here no user thread writes on the descriptor, which uv_close frees.
    std::lock_guard<std::mutex> lock(mutex_);
    fd_ = -1;
  }
  if (!opened_) {
    closed_.set_value();
    return;
  }
  uv_close(&socket_.handle, &ClientCore::on_closed);
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

// What a blocking call would throw for answer (status kOk: nothing).
Error failure_of(const std::string& address, const std::string& what, int64_t timeout_ms, const Answer& answer) {
  const Reply& reply = answer.reply;
  if (answer.source == Answer::Source::kServer && reply.status == Status::kTimeout) {
    return Error(Status::kTimeout, concat(what, " timed out after ", timeout_ms, " ms on ", address));
  }
  if (reply.status == Status::kOk) return Error(Status::kOk, "");
  switch (answer.source) {
    case Answer::Source::kShutdown: return Error(reply.status, reply.message);
    case Answer::Source::kLost: return Error(reply.status, concat(what, ": ", reply.message));
    case Answer::Source::kServer: break;
  }
  if (reply.status == Status::kAborted) {
    // The server answers kAborted only as it closes: to this caller, its host left.
    return Error(Status::kPeerLost, concat(what, ": lost the connection to the rendezvous store at ", address,
                                           " (did the process hosting it, rank 0 or tutti launch, exit?)"));
  }
  return Error(reply.status, concat(what, " on ", address, ": ", reply.message));
}

Request make(Op op, std::vector<std::string> keys) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  return r;
}

// Requests through one ClientCore; the blocking calls are pipelines of one request.
class PipelineImpl final : public Pipeline {
 public:
  PipelineImpl(std::shared_ptr<ClientCore> core, Deadline deadline)
      : core_(std::move(core)),
        deadline_(deadline),
        timeout_ms_(deadline.remaining_ms()),
        answers_(std::make_shared<Answers>()) {}
  ~PipelineImpl() override {
    // Answers still to come are dropped as they arrive.
    for (uint32_t id : ids_) {
      if (id != 0) core_->forget(id);
    }
  }

  size_t set(const std::string& key, const std::string& value) override {
    Request r = make(Op::kSet, {key});
    r.value = value;
    return push("set", std::move(r), false);
  }
  size_t add(const std::string& key, int64_t delta) override {
    Request r = make(Op::kAdd, {key});
    r.number = delta;
    return push("add", std::move(r), false);
  }
  size_t compare_set(const std::string& key, const std::string& expected, const std::string& desired) override {
    Request r = make(Op::kCompareSet, {key});
    r.expected = expected;
    r.value = desired;
    return push("compare_set", std::move(r), false);
  }
  size_t multi_get(const std::vector<std::string>& keys) override {
    return push("multi_get", make(Op::kMultiGet, keys), true);
  }
  size_t wait_any(const std::vector<std::string>& keys) override {
    Request r = make(Op::kWait, keys);
    r.wait_any = true;
    return push("wait_any", std::move(r), true);
  }
  size_t get_any(const std::vector<std::string>& keys) override {
    Request r = make(Op::kWait, keys);
    r.wait_any = true;
    r.with_value = true;
    return push("get_any", std::move(r), true);
  }
  size_t heartbeat(int64_t timeout_ms, const std::string& activity) override {
    Request r = make(Op::kHeartbeat, {});
    r.number = timeout_ms;
    r.value = activity;
    return push("heartbeat", std::move(r), false);
  }
  size_t member(const std::string& prefix, int64_t rank) override {
    Request r = make(Op::kMember, {prefix});
    r.number = rank;
    return push("member", std::move(r), false);
  }

  // Any request, named for messages; waits: it parks at the store until deadline.
  size_t push(const char* name, Request r, bool waits) {
    if (waits) r.number = timeout_ms_;
    size_t index_below = r.op == Op::kWait && r.wait_any ? r.keys.size() : 0;
    calls_.push_back(Call{concat("store ", name, " ", describe_keys(r.keys)), waits, index_below, {}});
    if (r.op == Op::kWait && r.with_value) calls_.back().keys = r.keys;
    unsent_.push_back(std::move(r));
    std::lock_guard<std::mutex> lock(answers_->mutex);
    answers_->slots.emplace_back();
    return calls_.size() - 1;
  }

  void send() override {
    if (unsent_.empty()) return;
    size_t first = ids_.size();
    size_t count = unsent_.size();
    std::vector<uint32_t> ids = core_->send(std::move(unsent_), answers_, first);
    unsent_.clear();
    ids_.resize(first + count, 0);  // none when the client had failed: answered already
    std::copy(ids.begin(), ids.end(), ids_.begin() + static_cast<ptrdiff_t>(first));
  }

  // Waits for answer i; nullptr when the deadline (and for a parked request, the
  // server's grace after it) passed first.
  const Answer* await(size_t i) {
    if (i >= ids_.size()) send();
    auto wait_until = deadline_.at();
    if (calls_.at(i).waits) wait_until += kServerTimeoutGrace;
    std::unique_lock<std::mutex> lock(answers_->mutex);
    auto answered = [&] { return answers_->slots[i].has_value(); };
    answers_->awaited = i;
    if (!answers_->arrived.wait_until(lock, wait_until, answered)) {
      answers_->awaited = Answers::kNone;
      lock.unlock();
      if (ids_[i] != 0 && core_->forget(ids_[i])) return nullptr;
      lock.lock();
      answers_->awaited = i;
      answers_->arrived.wait(lock, answered);  // answered as we gave up: being delivered
    }
    answers_->awaited = Answers::kNone;
    return &*answers_->slots[i];
  }

  void wait(size_t i) override {
    const Answer* answer = await(i);
    const Call& call = calls_[i];
    if (!answer) fail(Status::kTimeout, concat(call.what, " timed out after ", timeout_ms_, " ms on ", address()));
    Error error = failure_of(address(), call.what, timeout_ms_, *answer);
    if (error.status() != Status::kOk) throw error;
    const Reply& reply = answer->reply;
    if (call.index_below > 0 && (reply.number < 0 || static_cast<size_t>(reply.number) >= call.index_below)) {
      fail(Status::kTransport,
           concat(call.what, " on ", address(), ": the store answered index ", reply.number, ", out of range"));
    }
    if (reply.op == Op::kWait && !call.keys.empty() && !reply.with_value) {
      // A store of an earlier release answers GET_ANY as WAIT_ANY: read the value.
      PipelineImpl get(core_, deadline_);
      size_t g = get.push("get", make(Op::kGet, {call.keys.at(static_cast<size_t>(reply.number))}), true);
      get.wait(g);
      std::lock_guard<std::mutex> lock(answers_->mutex);
      answers_->slots[i]->reply.values = get.reply(g).values;
      answers_->slots[i]->reply.with_value = true;
    }
  }

  void wait_all() override {
    // The store answers a connection's requests in order (a parked one when it wakes),
    // so the last answer comes last: waiting for it first wakes this thread once, not
    // once for each answer.
    if (!calls_.empty()) answered_by(calls_.size() - 1, deadline_);
    for (size_t i = 0; i < calls_.size(); ++i) wait(i);
  }

  bool answered_by(size_t i, Deadline until) override {
    if (i >= ids_.size()) send();
    std::unique_lock<std::mutex> lock(answers_->mutex);
    answers_->awaited = i;
    bool answered = answers_->arrived.wait_until(lock, std::min(until.at(), deadline_.at()),
                                                 [&] { return answers_->slots.at(i).has_value(); });
    answers_->awaited = Answers::kNone;
    return answered;
  }

  int64_t number(size_t i) const override { return reply(i).number; }
  const std::string& value(size_t i) const override { return reply(i).values.at(0); }
  const std::vector<std::string>& values(size_t i) const override { return reply(i).values; }

  // Once waited for: request i's reply.
  const Reply& reply(size_t i) const {
    std::lock_guard<std::mutex> lock(answers_->mutex);
    return answers_->slots.at(i).value().reply;
  }

  // What call i is, for messages and the trace: "store get \"key\"".
  const std::string& what(size_t i) const { return calls_.at(i).what; }

 private:
  struct Call {
    std::string what;  // "store get \"key\"", for messages
    bool waits = false;
    size_t index_below = 0;         // WAIT any's answer is an index below it
    std::vector<std::string> keys;  // GET_ANY's, should the store not send the value
  };

  std::string address() const { return core_->address(); }

  std::shared_ptr<ClientCore> core_;
  const Deadline deadline_;
  const int64_t timeout_ms_;
  std::shared_ptr<Answers> answers_;
  std::vector<Call> calls_;
  std::vector<Request> unsent_;
  std::vector<uint32_t> ids_;  // of the requests sent, by index; 0: answered at once
};

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
    one(deadline, [&](PipelineImpl& calls) { return calls.set(key, value); });
  }
  std::string get(const std::string& key, Deadline deadline) override {
    return run("get", make(Op::kGet, {key}), deadline, true).values.at(0);
  }
  int64_t add(const std::string& key, int64_t delta, Deadline deadline) override {
    return one(deadline, [&](PipelineImpl& calls) { return calls.add(key, delta); }).number;
  }
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired,
                          Deadline deadline) override {
    return one(deadline, [&](PipelineImpl& calls) { return calls.compare_set(key, expected, desired); }).values.at(0);
  }
  void wait_all(const std::vector<std::string>& keys, Deadline deadline) override {
    run("wait_all", make(Op::kWait, keys), deadline, true);
  }
  size_t wait_any(const std::vector<std::string>& keys, Deadline deadline) override {
    return static_cast<size_t>(one(deadline, [&](PipelineImpl& calls) { return calls.wait_any(keys); }).number);
  }
  std::pair<size_t, std::string> get_any(const std::vector<std::string>& keys, Deadline deadline) override {
    Reply reply = one(deadline, [&](PipelineImpl& calls) { return calls.get_any(keys); });
    return {static_cast<size_t>(reply.number), reply.values.at(0)};
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
    Reply reply = one(deadline, [&](PipelineImpl& calls) { return calls.multi_get(keys); });
    expect_count("multi_get", keys, reply.values.size());
    return std::move(reply.values);
  }
  bool remove(const std::string& key, Deadline deadline) override {
    return run("remove", make(Op::kDelete, {key}), deadline, false).number != 0;
  }
  std::unique_ptr<Pipeline> pipeline(Deadline deadline) override {
    return std::make_unique<PipelineImpl>(core_, deadline);
  }

  void heartbeat(int64_t timeout_ms, const std::string& activity, Deadline deadline) override {
    one(deadline, [&](PipelineImpl& calls) { return calls.heartbeat(timeout_ms, activity); });
  }
  void member(const std::string& prefix, int64_t rank, Deadline deadline) override {
    one(deadline, [&](PipelineImpl& calls) { return calls.member(prefix, rank); });
  }
  std::vector<std::string> roster(const std::string& prefix, Deadline deadline) override {
    return run("roster", make(Op::kRoster, {prefix}), deadline, false).values;
  }
  void get_async(const std::string& key, int64_t timeout_ms, Done done) override {
    Request r = make(Op::kGet, {key});
    r.number = timeout_ms;
    run_async("get", std::move(r), timeout_ms, std::move(done));
  }
  void set_async(const std::string& key, const std::string& value, Done done) override {
    Request r = make(Op::kSet, {key});
    r.value = value;
    run_async("set", std::move(r), 0, std::move(done));
  }
  void heartbeat_async(int64_t timeout_ms, const std::string& activity, Done done) override {
    Request r = make(Op::kHeartbeat, {});
    r.number = timeout_ms;
    r.value = activity;
    r.with_value = true;  // the store's clock, for the trace
    run_async("heartbeat", std::move(r), timeout_ms, std::move(done));
  }

  void request_async(Request request, Answered done) override {
    core_->call_async(std::move(request), [done = std::move(done)](Answer answer) {
      done(answer.reply, answer.source != Answer::Source::kServer);
    });
  }

  void shutdown(Status status, const std::string& why) override {
    core_->fail_all(Answer::Source::kShutdown, status, why);
    auto core = core_;
    loop_->post([core] { core->close_on_loop(); });
  }

  std::string address() const override { return core_->address(); }

 private:
  // A blocking call: a pipeline of the one request that add puts in it. Returns its OK
  // reply or throws the error it stands for.
  template <typename Add>
  Reply one(Deadline deadline, Add add) {
    PipelineImpl calls(core_, deadline);
    size_t i = add(calls);
    if (!trace::on()) {
      calls.wait(i);
      return calls.reply(i);
    }
    // Traced: the request as a span on the control track, with how it ended.
    trace::Event event;
    event.phase = trace::Phase::kComplete;
    event.name = "store";
    event.cat = "store";
    event.stamp = trace::stamp();
    try {
      calls.wait(i);
    } catch (const Error& error) {
      event.length = trace::stamp() - event.stamp;
      event.ended(error.status());
      trace::record(event, concat(calls.what(i), ": ", error.what()));
      throw;
    }
    event.length = trace::stamp() - event.stamp;
    event.ended(Status::kOk);
    trace::record(event, calls.what(i));
    return calls.reply(i);
  }
  // The same for a request that Pipeline has no name for.
  Reply run(const char* name, Request r, Deadline deadline, bool waits) {
    return one(deadline, [&](PipelineImpl& calls) { return calls.push(name, std::move(r), waits); });
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
      fail(Status::kTransport, concat("store ", name, " ", describe_keys(keys), " on ", address(),
                                      ": the store answered ", got, " entries for ", keys.size(), " keys"));
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
    PipelineImpl calls(core_, deadline);
    const Answer* answer = calls.await(calls.push("hello", std::move(r), false));
    if (!answer) {
      fail(Status::kTimeout, concat(where, ": no answer to the handshake within ", timeout_ms,
                                    " ms; is the address that of a tutti store?"));
    }
    const Reply& reply = answer->reply;
    if (answer->source == Answer::Source::kLost) {
      fail(Status::kTransport, concat(where, " closed the connection during the handshake; it may be over its ",
                                      "max_connections or not a tutti store (see its log)"));
    }
    if (reply.status == Status::kDenied) fail(Status::kDenied, concat(where, " denied this process: ", reply.message));
    if (reply.status != Status::kOk) fail(Status::kTransport, concat(where, " refused the handshake: ", reply.message));
    return reply;
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
  fail(Status::kAborted,
       concat("connecting to the rendezvous store at ", address, " was given up (the init was aborted)"));
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
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kCancelPoll, until - std::chrono::steady_clock::now()));
  }
}

}  // namespace

std::unique_ptr<Client> Client::connect(const std::shared_ptr<loop::Loop>& loop, const std::string& host, uint16_t port,
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
  const bool try_local = local_socket_enabled();
  while (true) {
    ++tries;
    auto core = std::make_shared<ClientCore>(loop.get(), address);
    // The side door when the store is on this machine, else (or when it is full) TCP.
    int local = try_local ? connect_local(socket_address) : -1;
    bool posted = local >= 0 ? loop->post([core, local] { core->open_local_on_loop(local); })
                             : loop->post([core, socket_address] { core->connect_on_loop(socket_address); });
    if (!posted) {
      if (local >= 0) close(local);
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
      fail(Status::kTransport, concat("rendezvous store at ", address, ": cannot connect: ", uv_strerror(last), " (",
                                      uv_err_name(last), "); check the address"));
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline.at()) break;
    sleep_unless_cancelled(std::min(backoff, deadline.at() - now), cancelled);
    if (cancelled && cancelled()) give_up_cancelled(address);
    backoff = std::min(backoff * 2, std::chrono::duration_cast<std::chrono::steady_clock::duration>(kMaxBackoff));
    if (deadline.expired()) break;
  }
  auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  fail(Status::kTransport,
       concat("rendezvous store at ", address, ": ", uv_strerror(last), " after ", tries, " tries over ", spent,
              " ms; is rank 0 (or tutti launch) running, and is the ", "address right?"));
}

}  // namespace tutti::store
