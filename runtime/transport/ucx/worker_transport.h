// A Transport over one UCP worker (one per communicator; see connect.h for why).
//
// Messages are UCP tagged messages. The 64-bit UCP tag carries the sender, so that a
// receive matches on the sender and the tag with a full mask and never needs the
// endpoint it came through:
//   bits 63..44  source rank (20 bits: at most 1,048,576 ranks)
//   bit  43      TagSpace (collective 0, user 1)
//   bits 42..32  Tag::check (11 bits), the sender's call fingerprint
//   bits 31..0   Tag::value
// Receives match on the whole tag, check included: UCX then files them, and the
// messages that come before their receive, by the tag's hash. With the check left out
// of the mask (as it once was), UCX searched its whole list of early messages for every
// receive and every arriving message against every receive posted: with a rank running
// calls ahead of its root (reduce, gather: nothing makes the leaves wait), a 4-rank
// reduce between emulated nodes took 35-340 us a call instead of 1-8. A message of
// another call (the ranks' calls differ) then matches nothing: a receive that waits
// looks for one now and then (look_for_another_call) and takes it, so that it fails
// as a mismatch naming both fingerprints, not at the timeout, and its sender completes.
// One endpoint per peer, this rank included, is created on the first send or receive
// involving it, with UCP's peer-failure handling: a peer whose connection breaks is
// marked lost, and every request involving it fails with kPeerLost instead of
// hanging. Same-host peers are also watched through pidfds (peer_process.h).
//
// A peer's address is looked up (PeerDirectory) on that first send or receive too, so
// that a rank learns the addresses of the peers its algorithms talk to (a ring's two,
// a tree's log N) and never all N: an all-to-all of addresses through one store was
// O(N^2) and failed init at 10,000 ranks. Sends posted before the address has come
// wait in order and go out as progress() takes it in; receives need no address.
//
// Requests are pooled: after the first operations, posting allocates nothing. A
// Request* handed out is an Operation (worker_transport.cc) under the interface's
// name: Request stays incomplete, so that no two transports (or a test's fake) ever
// define the same class.
#pragma once

#include <poll.h>
#include <sys/types.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/common/status.h"
#include "runtime/transport/transport.h"
#include "runtime/transport/ucx/context.h"

namespace tutti::transport::ucx {

struct Operation;

// What a rank publishes for the others: where its worker is, and which process it is.
struct PeerCard {
  std::string host;  // host_identity() of its process
  pid_t pid = 0;
  std::string address;  // ucp_worker_get_address(), opaque bytes
};

// Where a transport finds its peers' cards. look_up never blocks: `found` runs once,
// later, on any thread, with kOk and the card or with the error that ended the search.
class PeerDirectory {
 public:
  using Found = std::function<void(Status status, const std::string& why, PeerCard card)>;
  virtual ~PeerDirectory() = default;
  virtual void look_up(int peer, Found found) = 0;
};

class WorkerTransport final : public Transport {
 public:
  // Creates the worker. Throws Error(kTransport) saying what UCX refused. The directory
  // is asked for each peer's card on the first send or receive involving it.
  WorkerTransport(std::shared_ptr<Context> context, int rank, int size, std::string where,
                  std::unique_ptr<PeerDirectory> directory);
  // Closes every endpoint, waiting a bounded time for sends to drain, then the worker.
  ~WorkerTransport() override;
  WorkerTransport(const WorkerTransport&) = delete;
  WorkerTransport& operator=(const WorkerTransport&) = delete;

  // This rank's card.
  PeerCard card() const;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Request* post_send(int peer, Tag tag, const void* data, size_t bytes) override;
  Request* post_recv(int peer, Tag tag, void* data, size_t bytes) override;
  bool progress() override;
  bool done(Request* request) override;
  size_t received_bytes(Request* request) override;
  void release(Request* request) override;
  bool finish(Request* request, size_t* received) override;
  // Returns after at most 1 s whatever timeout_ms says: UCX runs its keepalive checks
  // only while it is progressed, so the caller must come back to progress().
  bool wait_for_activity(int timeout_ms) override;
  void interrupt() override;
  Armed arm() override;
  void wait_armed(int timeout_ms) override;
  // Over TCP, UCX completes a send once its last bytes are in the endpoint's own
  // buffer; they reach the socket in a later ucp_worker_progress, once it has room.
  // InfiniBand's UD, which also completes sends before the peer has them, resends from
  // a timer on UCX's own async thread (uct_ud_iface_progress_enable adds it), so it
  // needs no progress from here; RC and shared memory hand the bytes over at once.
  bool sends_may_linger() const override { return sends_may_linger_.load(std::memory_order_relaxed); }
  const char* describe() const override { return describe_; }

 private:
  enum class CardState { kUnknown, kAsked, kKnown };
  struct Peer {
    WorkerTransport* owner = nullptr;  // for UCX's error callback, which gets only &peer
    int rank = 0;
    CardState card_state = CardState::kUnknown;
    PeerCard card;
    std::vector<Operation*> waiting;  // sends posted before its card came, in order
    ucp_ep_h endpoint = nullptr;
    // Sends up to this size try UCX's short path first (sent_at_once); lowered below a
    // size it refused that UCX then sent at once all the same. Reset with the endpoint.
    size_t at_once_max_bytes = 0;
    bool watched = false;  // whether its process has been looked at
    int process_fd = -1;   // pidfd of a same-host peer's process, or -1
    bool lost = false;
    std::string lost_why;  // "its connection failed: ...", when lost
    // Until when operations with a lost peer wait for what it sent before it ended.
    Deadline drained_by = Deadline::passed();
  };

  static void on_endpoint_error(void* arg, ucp_ep_h endpoint, ucs_status_t status);
  static void on_send_done(void* ucx_request, ucs_status_t status, void* user_data);
  static void on_recv_done(void* ucx_request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data);
  // What every receive of an operation (posted, or of a probed message) asks of UCX.
  static ucp_request_param_t receive_param(Operation* operation);

  // The directory's answers, which come on another thread; progress() takes them in.
  struct Answer {
    int peer;
    Status status;
    std::string why;
    PeerCard card;
  };
  struct Answers {
    std::mutex mutex;
    std::vector<Answer> waiting;    // guarded by mutex
    ucp_worker_h worker = nullptr;  // signalled on each answer; null once gone
    std::atomic<bool> any{false};   // read by every progress(), without the lock
  };

  // Inline, with the refusal out of line: every send and receive asks.
  Peer& peer_at(int peer, const char* call) {
    if (peer < 0 || peer >= size_) [[unlikely]]
      refuse_peer(peer, call);
    return peers_[peer];
  }
  [[noreturn, gnu::cold]] void refuse_peer(int peer, const char* call) const;
  // Whether peer's card is known; if not, asks the directory (once).
  bool card_known(Peer& peer);
  void take_answers();
  // Sends a small message at once, without an Operation: true if UCX took all of it.
  bool sent_at_once(ucp_ep_h endpoint, const void* data, size_t bytes, Tag tag);
  void send_now(ucp_ep_h endpoint, Operation* operation);
  ucp_ep_h endpoint_of(Peer& peer, Operation* operation);
  void watch_peer_process(Peer& peer);
  void mark_lost(Peer& peer, const std::string& why);
  void reap_ended_processes();
  Operation* acquire(bool is_recv, int peer, Tag tag, size_t bytes);
  void start(Operation* operation, ucs_status_ptr_t started);
  void recycle(Operation* operation);
  void settle(Operation* operation);
  void sweep_orphans();
  void close_endpoint_now(Peer& peer);
  void close_endpoints();
  bool sleep_on_worker(int timeout_ms);
  // Whether a receive that is not done should look for another call's message now:
  // at its 16th, 32nd, ... poll (spacing out to every 4096th), and after every sleep.
  bool due_for_a_look(Operation& operation) const;
  void look_for_another_call(Operation& operation);
  // Adds the endpoint's transports to describe(), and notes a TCP one.
  void note_transports(ucp_ep_h endpoint);
  [[noreturn]] void fail_operation(const Operation& operation) const;

  std::shared_ptr<Context> context_;  // outlives worker_, so declared first
  std::unique_ptr<PeerDirectory> directory_;
  std::shared_ptr<Answers> answers_ = std::make_shared<Answers>();  // shared with lookups in flight
  const int rank_;
  const int size_;
  const std::string where_;
  ucp_worker_h worker_ = nullptr;
  std::string address_;                                 // this worker's, for the other ranks
  std::string host_;                                    // host_identity() of this process
  std::vector<Peer> peers_;                             // sized once: UCX holds pointers to its elements
  int event_fd_ = -1;                                   // the worker's: wait_armed polls it from any thread
  std::vector<pollfd> wait_fds_;                        // the worker's event fd, then the peers' pidfds
  std::vector<int> wait_ranks_;                         // the peer of each pidfd in wait_fds_[1..]
  std::vector<std::unique_ptr<Operation>> operations_;  // every one ever made
  std::vector<Operation*> free_operations_;
  std::vector<Operation*> orphans_;            // released, but UCX could neither finish nor cancel them
  std::vector<std::string> transports_;        // UCX transports of the endpoints made so far
  uint32_t sleeps_ = 0;                        // sleep_on_worker calls, for due_for_a_look
  char describe_[96] = "ucx";                  // rewritten in place, so describe()'s pointer stays valid
  std::atomic<bool> sends_may_linger_{false};  // an endpoint has a TCP lane; read by any thread
};

}  // namespace tutti::transport::ucx
