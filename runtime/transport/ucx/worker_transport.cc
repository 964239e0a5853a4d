#include "runtime/transport/ucx/worker_transport.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/transport/ucx/peer_process.h"

namespace tutti::transport::ucx {

// One posted send or receive. UCX's own request (when the operation did not finish at
// once) reports back through the callbacks, which find this struct through user_data.
struct Operation {
  void* ucx = nullptr;  // UCX's request; null when the operation finished at once
  bool is_recv = false;
  bool completed = false;
  bool never_started = false;  // no endpoint to the peer could be made; status says why
  ucs_status_t status = UCS_OK;
  int peer = 0;
  Tag tag{};
  size_t bytes = 0;                 // the caller's buffer
  const void* send_data = nullptr;  // a send's buffer
  void* recv_data = nullptr;        // a receive's buffer
  bool awaiting_card = false;       // a send queued in its peer's `waiting`
  ucp_tag_recv_info_t info{};       // for a receive: the arriving message (its length)
  // A receive's looks for another call's message (due_for_a_look).
  uint32_t idle_polls = 0;          // done() calls that found it incomplete
  uint32_t looked_after_sleep = 0;  // the transport's sleeps_ at its last look
  bool took_another_call = false;   // it now receives that message instead
};

namespace {

Request* handle_of(Operation* operation) { return reinterpret_cast<Request*>(operation); }
Operation* operation_of(Request* request) { return reinterpret_cast<Operation*>(request); }

constexpr int kRankShift = 44;
constexpr int kSpaceShift = 43;
constexpr int kCheckShift = 32;
// A receive matches on the whole tag (worker_transport.h says why).
constexpr ucp_tag_t kWholeTag = ~ucp_tag_t{0};
// The tag of a step of a call (sender, space, value) without the sender's fingerprint:
// what a message of another call made in its place still has in common with the
// receive (look_for_another_call).
constexpr ucp_tag_t kStepMask = ~(static_cast<ucp_tag_t>(kCheckMask) << kCheckShift);
// A receive not done looks for another call's message at its kFirstLook-th poll, at
// twice that, ... up to every kLookEvery-th, and after every sleep on the worker. A look
// walks UCX's whole list of early messages (a partial mask has no hash to go by), which
// with ranks running calls ahead holds thousands: spaced out, it stays a small part of a
// long wait, and a mismatch is still found within milliseconds.
constexpr uint32_t kFirstLook = 16;
constexpr uint32_t kLookEvery = 4096;

// What done() gives a lost peer's last messages before it reports the loss. They lie
// in this process already (this worker's shared-memory FIFO, a socket buffer). Where
// this rank has an endpoint to the peer, UCX polls the transport they come through, and
// rounds of progress until one finds nothing read them. Where it has none (it has only
// received from the peer), that transport may be one no endpoint of this worker uses,
// which UCX polls only after its async thread has seen an arrival (adaptive progress),
// and on a loaded machine that thread runs milliseconds late: then done() waits for it,
// at most this long, once per peer.
constexpr int kMaxDrainRounds = 64;
constexpr int kUnwatchedDrainMs = 50;
// UCX runs its keepalive checks only inside ucp_worker_progress, so a waiter wakes at
// least this often to let the caller progress; a dead peer is then seen within about
// KEEPALIVE_INTERVAL (context.h) plus this.
constexpr int kMaxSleepMs = 1000;
// How long release() lets a request that UCX cannot cancel finish, before it closes
// the endpoint (and again after).
constexpr int kSettleMs = 100;
// How long the destructor lets endpoints flush the sends that already completed
// locally, so that a rank that finishes first does not take its last messages with it.
constexpr int kCloseMs = 1000;
// Sends up to this size first try UCX's short path, which takes a message whole or not
// at all without a request (sent_at_once): over TCP it takes up to a segment (8 KiB),
// over shared memory what fits a FIFO element (about 100 bytes). Past it, the try
// would only fail; each endpoint then learns its own limit (Peer::at_once_max_bytes).
constexpr size_t kAtOnceMaxBytes = 8192;
// What every transport's short path takes (UCX's shared memory about 100 bytes, TCP a
// segment): an endpoint's learned limit never goes below it.
constexpr size_t kAtOnceFloorBytes = 64;

ucp_tag_t ucx_tag(int source, Tag tag) {
  return static_cast<ucp_tag_t>(source) << kRankShift | static_cast<ucp_tag_t>(tag.space) << kSpaceShift |
         static_cast<ucp_tag_t>(tag.check & kCheckMask) << kCheckShift | tag.value;
}

uint16_t check_of(ucp_tag_t tag) { return static_cast<uint16_t>((tag >> kCheckShift) & kCheckMask); }

// Whether a completed operation carried what it should: a receive, a message of the
// same call (its sender's fingerprint).
bool carried_the_right_call(const Operation& operation) {
  return !operation.is_recv || check_of(operation.info.sender_tag) == (operation.tag.check & kCheckMask);
}

std::string describe_tag(Tag tag) {
  return concat(tag.space == TagSpace::kUser ? "user" : "collective", " tag ", tag.value);
}

bool is_peer_failure(ucs_status_t status) {
  return status == UCS_ERR_CONNECTION_RESET || status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_UNREACHABLE;
}

// "3:sysv/memory.0" in a "lane[0]:  3:sysv/memory.0 md[2] ..." line of
// ucp_ep_print_info gives "sysv". The format is UCX's debug output, so a line that
// does not look like this is skipped rather than trusted.
std::string transport_of_lane(const std::string& line) {
  size_t lane = line.find("lane[");
  if (lane == std::string::npos) return "";
  size_t colon = line.find("]:", lane);
  if (colon == std::string::npos) return "";
  size_t start = line.find_first_not_of(' ', colon + 2);
  if (start == std::string::npos) return "";
  size_t index_end = line.find(':', start);
  size_t slash = line.find('/', start);
  if (index_end == std::string::npos || slash == std::string::npos || slash < index_end) return "";
  return line.substr(index_end + 1, slash - index_end - 1);
}

}  // namespace

WorkerTransport::WorkerTransport(std::shared_ptr<Context> context, int rank, int size, std::string where,
                                 std::unique_ptr<PeerDirectory> directory)
    : context_(std::move(context)),
      directory_(std::move(directory)),
      rank_(rank),
      size_(size),
      where_(std::move(where)),
      peers_(size) {
  std::string name = concat("tutti ", where_, " rank ", rank_);
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_NAME;
  // One thread at a time drives a transport (transport.h), not always the same one;
  // interrupt() from other threads needs nothing more, as ucp_worker_signal is safe
  // from any thread in every thread mode (ucp.h).
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  params.name = name.c_str();
  ucs_status_t status = ucp_worker_create(context_->get(), &params, &worker_);
  // A network device the context listed has gone since (Context::renew): list them
  // again. Twice at most, for devices that come and go while this runs.
  for (int renewed = 0; status == UCS_ERR_NO_DEVICE && renewed < 2; ++renewed) {
    log::info(where_, ": a network device UCX listed has gone (ucp_worker_create: ", ucs_status_string(status),
              "); listing them again");
    context_ = Context::renew(context_);
    status = ucp_worker_create(context_->get(), &params, &worker_);
  }
  const char* call = "ucp_worker_create";
  if (status == UCS_OK) {
    call = "ucp_worker_get_efd";
    status = ucp_worker_get_efd(worker_, &event_fd_);
  }
  if (status == UCS_OK) {
    call = "ucp_worker_get_address";
    ucp_address_t* address = nullptr;
    size_t length = 0;
    status = ucp_worker_get_address(worker_, &address, &length);
    if (status == UCS_OK) {
      address_.assign(reinterpret_cast<const char*>(address), length);
      ucp_worker_release_address(worker_, address);
    }
  }
  if (status != UCS_OK) {
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    fail(Status::kTransport,
         concat("could not create the UCX worker of rank ", rank_, " on ", where_, " (", call, ": ",
                ucs_status_string(status), "); check the UCX_* variables in the environment (ucx_info -c)"));
  }
  host_ = host_identity();
  wait_fds_.push_back(pollfd{event_fd_, POLLIN, 0});
  for (int i = 0; i < size_; ++i) {
    peers_[i].owner = this;
    peers_[i].rank = i;
  }
  peers_[rank_].card = card();
  peers_[rank_].card_state = CardState::kKnown;
  answers_->worker = worker_;
}

WorkerTransport::~WorkerTransport() {
  {
    // Lookups still in flight answer into nothing from now on.
    std::lock_guard<std::mutex> lock(answers_->mutex);
    answers_->worker = nullptr;
  }
  close_endpoints();
  ucp_worker_destroy(worker_);
  for (const Peer& peer : peers_) {
    if (peer.process_fd >= 0) ::close(peer.process_fd);
  }
}

PeerCard WorkerTransport::card() const { return PeerCard{host_, ::getpid(), address_}; }

bool WorkerTransport::card_known(Peer& peer) {
  if (peer.card_state == CardState::kKnown) return true;
  if (peer.card_state == CardState::kUnknown) {
    peer.card_state = CardState::kAsked;
    directory_->look_up(peer.rank,
                        [answers = answers_, rank = peer.rank](Status status, const std::string& why, PeerCard card) {
                          std::lock_guard<std::mutex> lock(answers->mutex);
                          if (answers->worker == nullptr) return;
                          answers->waiting.push_back(Answer{rank, status, why, std::move(card)});
                          answers->any.store(true, std::memory_order_release);
                          ucp_worker_signal(answers->worker);  // wakes a thread asleep in wait_for_activity
                        });
  }
  return false;
}

void WorkerTransport::take_answers() {
  std::vector<Answer> taken;
  {
    std::lock_guard<std::mutex> lock(answers_->mutex);
    taken.swap(answers_->waiting);
    answers_->any.store(false, std::memory_order_relaxed);
  }
  for (Answer& answer : taken) {
    Peer& peer = peers_[answer.peer];
    std::vector<Operation*> waiting;
    waiting.swap(peer.waiting);
    if (answer.status != Status::kOk) {
      // The store is gone (the directory asks again on its own while it merely waits):
      // nothing more can be said to this peer.
      mark_lost(peer, concat("its address could not be read: ", answer.why));
    } else {
      peer.card = std::move(answer.card);
      peer.card_state = CardState::kKnown;
      // The endpoint now, as the first message would have made it: a peer this rank only
      // receives from is watched from here on.
      if (!peer.lost) endpoint_of(peer, nullptr);
    }
    for (Operation* operation : waiting) {
      operation->awaiting_card = false;
      if (peer.lost) {
        operation->completed = true;
        operation->status = UCS_ERR_CONNECTION_RESET;
        continue;
      }
      ucp_ep_h endpoint = endpoint_of(peer, operation);
      if (endpoint != nullptr) send_now(endpoint, operation);
    }
  }
}

void WorkerTransport::refuse_peer(int peer, const char* call) const {
  fail(Status::kInvalidArgument, concat(call, ": peer ", peer, " is not a rank of ", where_, " (size ", size_,
                                        "); use a rank in [0, ", size_ - 1, "]"));
}

Request* WorkerTransport::post_send(int peer, Tag tag, const void* data, size_t bytes) {
  Peer& to = peer_at(peer, "post_send");
  const bool tried_at_once = bytes <= to.at_once_max_bytes && to.endpoint != nullptr && !to.lost;
  if (tried_at_once && sent_at_once(to.endpoint, data, bytes, tag)) return nullptr;
  Operation* operation = acquire(false, peer, tag, bytes);
  if (to.lost) {
    operation->completed = true;
    operation->status = UCS_ERR_CONNECTION_RESET;
    return handle_of(operation);
  }
  operation->send_data = data;
  if (!card_known(to)) {
    operation->awaiting_card = true;
    to.waiting.push_back(operation);
    return handle_of(operation);
  }
  ucp_ep_h endpoint = endpoint_of(to, operation);
  if (endpoint != nullptr) send_now(endpoint, operation);
  if (operation->completed && operation->status == UCS_OK) {
    // UCX sent it inside the call (a shared-memory message past what the short path
    // takes goes whole into the peer's queue), so there is nothing to wait for. Had the
    // short path been tried and refused it, the refusal was for its size, not for a
    // full queue (unless the peer emptied the queue in between, which the floor keeps
    // from costing small sends their short path): sizes from this one up skip the try.
    if (tried_at_once) to.at_once_max_bytes = std::max(bytes - 1, kAtOnceFloorBytes);
    recycle(operation);
    return nullptr;
  }
  return handle_of(operation);
}

bool WorkerTransport::sent_at_once(ucp_ep_h endpoint, const void* data, size_t bytes, Tag tag) {
  // Only UCX's short path, which either sends the whole message now or refuses before
  // it allocates anything (UCS_ERR_NO_RESOURCE; then the caller posts it as usual).
  // It is the path UCX tries first for any send, so messages stay in order.
  ucp_request_param_t param;
  param.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
  return ucp_tag_send_nbx(endpoint, data, bytes, ucx_tag(rank_, tag), &param) == nullptr;
}

void WorkerTransport::send_now(ucp_ep_h endpoint, Operation* operation) {
  // UCX reads only the fields that op_attr_mask names: the rest stay unwritten (a
  // small send's path is a few hundred instructions, and this struct is 80 bytes).
  ucp_request_param_t param;
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &on_send_done;
  param.user_data = operation;
  start(operation,
        ucp_tag_send_nbx(endpoint, operation->send_data, operation->bytes, ucx_tag(rank_, operation->tag), &param));
}

Request* WorkerTransport::post_recv(int peer, Tag tag, void* data, size_t bytes) {
  Peer& from = peer_at(peer, "post_recv");
  Operation* operation = acquire(true, peer, tag, bytes);
  // A receive matches by tag and needs no endpoint, but UCX watches a peer's health
  // only through an endpoint to it: without one, a rank that only receives from a
  // peer would never see it die. A message that arrived before the peer was lost is
  // still delivered, so the receive is posted either way.
  if (from.endpoint == nullptr && !from.lost && card_known(from)) endpoint_of(from, nullptr);
  operation->recv_data = data;
  operation->looked_after_sleep = sleeps_;
  const ucp_request_param_t param = receive_param(operation);
  start(operation, ucp_tag_recv_nbx(worker_, data, bytes, ucx_tag(peer, tag), kWholeTag, &param));
  return handle_of(operation);
}

ucp_request_param_t WorkerTransport::receive_param(Operation* operation) {
  ucp_request_param_t param;  // UCX reads only what op_attr_mask names (send_now)
  // No immediate completion: UCX 1.13 leaves recv_info unwritten when a receive
  // completes at once (its message was waiting), so the length would be lost. Denied
  // that, UCX calls on_recv_done inside the receive call instead, with the length.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv = &on_recv_done;
  param.user_data = operation;
  return param;
}

bool WorkerTransport::due_for_a_look(Operation& operation) const {
  if (operation.took_another_call) return false;
  const uint32_t polls = ++operation.idle_polls;
  const bool due = polls < kLookEvery ? polls >= kFirstLook && (polls & (polls - 1)) == 0 : polls % kLookEvery == 0;
  return due || operation.looked_after_sleep != sleeps_;
}

void WorkerTransport::look_for_another_call(Operation& operation) {
  operation.looked_after_sleep = sleeps_;
  const ucp_tag_t tag = ucx_tag(operation.peer, operation.tag);
  ucp_tag_recv_info_t info;
  if (ucp_tag_probe_nb(worker_, tag, kStepMask, 0, &info) == nullptr) return;
  // The same fingerprint: a later message of this very step, for a receive not posted
  // yet (every message the peer sends for one call carries that call's fingerprint).
  if (check_of(info.sender_tag) == (operation.tag.check & kCheckMask)) return;
  // Another call's. The receive has matched nothing (the peer's messages for this step
  // all carry that other fingerprint), so UCX cancels it at once; the message then
  // comes into its buffer, as it would have with the check left out of the mask, and
  // done() reports the mismatch with both fingerprints once it is in.
  ucp_request_cancel(worker_, operation.ucx);
  if (!operation.completed) return;  // matched after all: its own message is coming
  ucp_request_free(operation.ucx);
  ucp_tag_message_h message = ucp_tag_probe_nb(worker_, tag, kStepMask, 1, &info);
  operation.ucx = nullptr;
  operation.completed = false;
  operation.status = UCS_OK;
  operation.took_another_call = true;
  const ucp_request_param_t param = receive_param(&operation);
  start(&operation, ucp_tag_msg_recv_nbx(worker_, operation.recv_data, operation.bytes, message, &param));
}

ucp_ep_h WorkerTransport::endpoint_of(Peer& peer, Operation* operation) {
  if (peer.endpoint != nullptr) return peer.endpoint;
  // Its process first: UCX fails an endpoint to a process that has ended (its shared
  // memory gone) and prints errors about it, where the peer has only finished.
  watch_peer_process(peer);
  if (peer.lost) {
    if (operation != nullptr) {
      operation->completed = true;
      operation->status = UCS_ERR_CONNECTION_RESET;
    }
    return nullptr;
  }
  ucp_ep_params_t params{};
  params.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer.card.address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &on_endpoint_error;
  params.err_handler.arg = &peer;
  ucs_status_t status = ucp_ep_create(worker_, &params, &peer.endpoint);
  if (status != UCS_OK) {
    // No endpoint to watch the peer's health through (an endpoint to a process that is
    // ending fails): its process, watched above, still says whether it lives, so that a
    // receive from it fails when it ends rather than at the op timeout.
    peer.endpoint = nullptr;
    if (operation != nullptr) {
      operation->completed = true;
      operation->never_started = true;
      operation->status = status;
    }
    return nullptr;
  }
  note_transports(peer.endpoint);
  peer.at_once_max_bytes = kAtOnceMaxBytes;
  return peer.endpoint;
}

void WorkerTransport::watch_peer_process(Peer& peer) {
  if (peer.watched) return;
  peer.watched = true;
  if (host_.empty() || peer.card.host != host_ || peer.card.pid == ::getpid()) return;
  ProcessWatch watch = watch_process(peer.card.pid);
  if (watch.ended) {
    mark_lost(peer, concat("its process ", peer.card.pid, " has ended"));
  } else if (watch.fd >= 0) {
    peer.process_fd = watch.fd;
    wait_fds_.push_back(pollfd{watch.fd, POLLIN, 0});
    wait_ranks_.push_back(peer.rank);
  }
}

void WorkerTransport::on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  peer->owner->mark_lost(*peer, concat("its connection failed: ", ucs_status_string(status)));
}

void WorkerTransport::mark_lost(Peer& peer, const std::string& why) {
  if (peer.lost) return;
  peer.lost = true;
  peer.lost_why = why;
  peer.drained_by = peer.endpoint == nullptr ? Deadline::after_ms(kUnwatchedDrainMs) : Deadline::passed();
  // Debug only: the failing requests carry the news to the caller, and peers that end
  // first at teardown are no news at all.
  log::debug("ucx: lost rank ", peer.rank, " of ", where_, " (", why, ")");
}

void WorkerTransport::reap_ended_processes() {
  for (size_t i = 1; i < wait_fds_.size();) {
    if (wait_fds_[i].revents == 0) {
      ++i;
      continue;
    }
    Peer& peer = peers_[wait_ranks_[i - 1]];
    mark_lost(peer, concat("its process ", peer.card.pid, " has ended"));
    ::close(peer.process_fd);
    peer.process_fd = -1;
    wait_fds_.erase(wait_fds_.begin() + static_cast<std::ptrdiff_t>(i));
    wait_ranks_.erase(wait_ranks_.begin() + static_cast<std::ptrdiff_t>(i - 1));
  }
}

Operation* WorkerTransport::acquire(bool is_recv, int peer, Tag tag, size_t bytes) {
  Operation* operation;
  if (free_operations_.empty()) {
    operations_.push_back(std::make_unique<Operation>());
    operation = operations_.back().get();
    // recycle() then never allocates: the free list can hold every operation there is.
    free_operations_.reserve(operations_.size());
  } else {
    operation = free_operations_.back();
    free_operations_.pop_back();
    // What a post does not set itself (ucx is null since recycle()).
    operation->completed = false;
    operation->never_started = false;
    operation->status = UCS_OK;
    operation->awaiting_card = false;
    operation->info = {};
    operation->idle_polls = 0;
    operation->took_another_call = false;
  }
  operation->is_recv = is_recv;
  operation->peer = peer;
  operation->tag = tag;
  operation->bytes = bytes;
  return operation;
}

void WorkerTransport::start(Operation* operation, ucs_status_ptr_t started) {
  if (UCS_PTR_IS_PTR(started)) {
    operation->ucx = started;
    return;
  }
  // A send that finished at once (UCS_OK), or an operation UCX refused; UCX calls no
  // callback in either case.
  operation->completed = true;
  operation->status = UCS_PTR_STATUS(started);
}

void WorkerTransport::on_send_done(void*, ucs_status_t status, void* user_data) {
  auto* operation = static_cast<Operation*>(user_data);
  operation->status = status;
  operation->completed = true;
}

void WorkerTransport::on_recv_done(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
  auto* operation = static_cast<Operation*>(user_data);
  if (info != nullptr) operation->info = *info;
  operation->status = status;
  operation->completed = true;
}

bool WorkerTransport::progress() {
  bool any = false;
  if (answers_->any.load(std::memory_order_acquire)) {
    take_answers();
    any = true;
  }
  // One round: the caller looks at its requests between rounds and comes back while
  // they are not done, so a round that would find nothing (the common case once a
  // small message has arrived) is never paid for. Looping until a round found nothing
  // cost 2 ranks 6-8% per 8-byte all_reduce, over TCP and over UCX's shared memory.
  return ucp_worker_progress(worker_) != 0 || any;
}

bool WorkerTransport::done(Request* request) {
  if (request == nullptr) return true;  // a send that completed as it was posted
  Operation& operation = *operation_of(request);
  if (operation.completed) {
    if (operation.status != UCS_OK) fail_operation(operation);
    if (!carried_the_right_call(operation)) {
      fail(Status::kMismatch,
           concat("rank ", operation.peer, " sent a message for another call (", describe_tag(operation.tag), " on ",
                  where_, ": its call fingerprint ", check_of(operation.info.sender_tag), ", this rank's ",
                  operation.tag.check & kCheckMask,
                  "): the ranks made different collective calls, or this one with "
                  "a different count, dtype, op or root; every rank must make the same calls in the same order "
                  "(TUTTI_CHECK=1 names the fields that differ)"));
    }
    return true;
  }
  const Peer& peer = peers_[operation.peer];
  if (peer.lost) {
    // What the peer sent before it ended may not have been read yet (kMaxDrainRounds):
    // progress, and sleep on the worker, which UCX wakes when it sees an arrival, so
    // that a rank that sends and exits at once does not take its message with it.
    for (int round = 0; round < kMaxDrainRounds && !operation.completed && progress(); ++round) {
    }
    while (!operation.completed && !peer.drained_by.expired()) {
      if (!progress()) sleep_on_worker(static_cast<int>(std::max<int64_t>(peer.drained_by.remaining_ms(), 1)));
    }
    if (operation.completed) return done(request);
    fail_operation(operation);
  }
  if (operation.is_recv && due_for_a_look(operation)) {
    look_for_another_call(operation);
    if (operation.completed) return done(request);
  }
  return false;
}

size_t WorkerTransport::received_bytes(Request* request) { return operation_of(request)->info.length; }

void WorkerTransport::fail_operation(const Operation& operation) const {
  const Peer& peer = peers_[operation.peer];
  const char* direction = operation.is_recv ? "from" : "to";
  if (peer.lost || is_peer_failure(operation.status)) {
    std::string why =
        peer.lost ? peer.lost_why : concat("its connection failed: ", ucs_status_string(operation.status));
    fail(Status::kPeerLost,
         concat("lost rank ", operation.peer, " of ", where_, " (", why, ") during a ",
                operation.is_recv ? "receive" : "send", " of ", operation.bytes, " bytes ", direction,
                " it; check whether rank ", operation.peer, " crashed or was killed (its own output says why)"));
  }
  if (operation.status == UCS_ERR_MESSAGE_TRUNCATED) {
    size_t arrived = std::max<size_t>(operation.info.length, operation.bytes + 1);
    fail(Status::kInvalidArgument,
         concat("a message of at least ", arrived, " bytes from rank ", operation.peer, " (",
                describe_tag(operation.tag), ") does not fit the receive buffer of ", operation.bytes, " bytes on ",
                where_, "; the ranks disagree on the message size: receive into a buffer as large as what is sent"));
  }
  if (operation.never_started) {
    fail(Status::kTransport, concat("could not create a UCX endpoint to rank ", operation.peer, " of ", where_, " (",
                                    ucs_status_string(operation.status),
                                    "); check that the ranks share a transport UCX can use (ucx_info -d on each "
                                    "host; UCX_TLS, UCX_NET_DEVICES)"));
  }
  fail(Status::kTransport,
       concat("UCX failed a ", operation.is_recv ? "receive" : "send", " of ", operation.bytes, " bytes ", direction,
              " rank ", operation.peer, " (", describe_tag(operation.tag), ") on ", where_, ": ",
              ucs_status_string(operation.status), "; set UCX_LOG_LEVEL=info to see what UCX saw"));
}

// Above release, which every step of every collective calls, so that it inlines.
inline void WorkerTransport::recycle(Operation* operation) {
  if (operation->ucx != nullptr) ucp_request_free(operation->ucx);
  operation->ucx = nullptr;
  free_operations_.push_back(operation);
}

void WorkerTransport::release(Request* request) {
  if (request == nullptr) return;
  Operation* operation = operation_of(request);
  if (!orphans_.empty()) sweep_orphans();
  if (operation->awaiting_card) {
    // Never handed to UCX: it only leaves its peer's queue.
    std::vector<Operation*>& waiting = peers_[operation->peer].waiting;
    waiting.erase(std::find(waiting.begin(), waiting.end(), operation));
    recycle(operation);
    return;
  }
  if (!operation->completed) settle(operation);
  if (!operation->completed) {
    log::warn("ucx: rank ", rank_, " of ", where_, " released a ", operation->is_recv ? "receive" : "send", " of ",
              operation->bytes, " bytes ", operation->is_recv ? "from" : "to", " rank ", operation->peer,
              " that UCX could neither finish nor cancel; its buffer may be used until the communicator is "
              "destroyed");
    orphans_.push_back(operation);
    return;
  }
  recycle(operation);
}

bool WorkerTransport::finish(Request* request, size_t* received) {
  // One call where a step's wait made three, each through the vtable; done() only for
  // what is not done, or not right.
  if (request == nullptr) return true;
  Operation* operation = operation_of(request);
  const bool done_right = operation->completed && operation->status == UCS_OK && carried_the_right_call(*operation);
  if (!done_right && !done(request)) return false;
  if (received != nullptr) *received = operation->info.length;
  // What release() does with a completed operation.
  if (!orphans_.empty()) sweep_orphans();
  recycle(operation);
  return true;
}

void WorkerTransport::settle(Operation* operation) {
  // UCX can cancel only a receive not yet matched (its callback runs at once, with
  // UCS_ERR_CANCELED). A send, or a receive whose message is arriving, has to finish
  // first; the buffer is the caller's again only when UCX is done with it.
  ucp_request_cancel(worker_, operation->ucx);
  Deadline deadline = Deadline::after_ms(kSettleMs);
  while (!operation->completed && !deadline.expired()) {
    if (!progress()) sleep_on_worker(1);
  }
  Peer& peer = peers_[operation->peer];
  if (operation->completed || peer.endpoint == nullptr) return;
  // The peer is not taking the message (it has not posted the receive, or is gone).
  // Closing the endpoint by force fails every operation on it, which is the only way
  // UCX lets go of a send's buffer; the next post to the peer makes a new endpoint.
  close_endpoint_now(peer);
  deadline = Deadline::after_ms(kSettleMs);
  while (!operation->completed && !deadline.expired()) {
    if (!progress()) sleep_on_worker(1);
  }
}

void WorkerTransport::sweep_orphans() {
  for (size_t i = 0; i < orphans_.size();) {
    if (orphans_[i]->completed) {
      recycle(orphans_[i]);
      orphans_[i] = orphans_.back();
      orphans_.pop_back();
    } else {
      ++i;
    }
  }
}

void WorkerTransport::close_endpoint_now(Peer& peer) {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t closing = ucp_ep_close_nbx(peer.endpoint, &param);
  peer.endpoint = nullptr;
  if (!UCS_PTR_IS_PTR(closing)) return;
  Deadline deadline = Deadline::after_ms(kSettleMs);
  while (ucp_request_check_status(closing) == UCS_INPROGRESS && !deadline.expired()) {
    if (!progress()) sleep_on_worker(1);
  }
  ucp_request_free(closing);
}

void WorkerTransport::close_endpoints() {
  std::vector<ucs_status_ptr_t> closing;
  for (Peer& peer : peers_) {
    if (peer.endpoint == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // Flushing delivers what already completed locally (a send completes once UCX has
    // the data, not once the peer has it). UCX requires a failed endpoint to be closed
    // by force, and flushing it could only wait.
    param.flags = peer.lost ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t closed = ucp_ep_close_nbx(peer.endpoint, &param);
    peer.endpoint = nullptr;
    if (UCS_PTR_IS_PTR(closed)) closing.push_back(closed);
  }
  Deadline deadline = Deadline::after_ms(kCloseMs);
  auto pending = [&] {
    return std::any_of(closing.begin(), closing.end(),
                       [](void* request) { return ucp_request_check_status(request) == UCS_INPROGRESS; });
  };
  while (pending() && !deadline.expired()) {
    if (!progress()) sleep_on_worker(1);
  }
  if (pending()) {
    log::debug("ucx: rank ", rank_, " of ", where_, " destroys its worker with endpoints still flushing after ",
               kCloseMs, " ms (a peer that is gone or not progressing)");
  }
  for (void* request : closing) ucp_request_free(request);
}

bool WorkerTransport::wait_for_activity(int timeout_ms) {
  return sleep_on_worker(std::clamp(timeout_ms, 0, kMaxSleepMs));
}

Transport::Armed WorkerTransport::arm() {
  // Arming fails with BUSY while events wait to be progressed: then there is something
  // to do already. Once armed, the event fd wakes poll() on any arrival, completion or
  // ucp_worker_signal (interrupt()).
  ucs_status_t armed = ucp_worker_arm(worker_);
  if (armed == UCS_ERR_BUSY) return Armed::kBusy;
  if (armed != UCS_OK) {
    // Not expected with UCP_FEATURE_WAKEUP.
    log::debug("ucx: ucp_worker_arm failed on ", where_, ": ", ucs_status_string(armed));
    return Armed::kUnsupported;
  }
  ++sleeps_;
  return Armed::kArmed;
}

void WorkerTransport::wait_armed(int timeout_ms) {
  // The event fd alone: the pidfds are reaped by the thread that holds the transport
  // (sleep_on_worker), and one of an ended peer stays readable.
  pollfd event{event_fd_, POLLIN, 0};
  ::poll(&event, 1, std::clamp(timeout_ms, 0, kMaxSleepMs));
}

bool WorkerTransport::sleep_on_worker(int timeout_ms) {
  switch (arm()) {
    case Armed::kBusy: return false;
    case Armed::kUnsupported:
      // A short nap keeps the caller from spinning.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 1)));
      return true;
    case Armed::kArmed: break;
  }
  // The pidfds too, on a peer's exit.
  if (::poll(wait_fds_.data(), wait_fds_.size(), timeout_ms) > 0) reap_ended_processes();
  return true;
}

void WorkerTransport::interrupt() { ucp_worker_signal(worker_); }

void WorkerTransport::note_transports(ucp_ep_h endpoint) {
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = ::open_memstream(&text, &length);
  if (stream == nullptr) return;
  ucp_ep_print_info(endpoint, stream);
  std::fclose(stream);
  std::string info(text, length);
  std::free(text);
  bool changed = false;
  for (size_t begin = 0; begin < info.size();) {
    size_t end = info.find('\n', begin);
    if (end == std::string::npos) end = info.size();
    std::string name = transport_of_lane(info.substr(begin, end - begin));
    if (name == "tcp") sends_may_linger_.store(true, std::memory_order_relaxed);
    if (!name.empty() && std::find(transports_.begin(), transports_.end(), name) == transports_.end()) {
      transports_.push_back(name);
      changed = true;
    }
    begin = end + 1;
  }
  if (!changed) return;
  std::string joined;
  for (const std::string& name : transports_) joined += (joined.empty() ? "" : ", ") + name;
  std::snprintf(describe_, sizeof(describe_), "ucx (%s)", joined.c_str());
}

}  // namespace tutti::transport::ucx
