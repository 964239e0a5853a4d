#include "runtime/transport/ucx/connect.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/transport/ucx/context.h"
#include "runtime/transport/ucx/worker_transport.h"

namespace tutti::transport::ucx {
namespace {

// The tag gives the source rank 20 bits (worker_transport.h).
constexpr int kMaxRanks = 1 << 20;

std::string key_of(const std::string& prefix, int rank) { return concat(prefix, "ucx/", rank); }

// "<host>\n<pid>\n<address>": the address is binary, and store values are too, so it
// goes last, as it is.
std::string encode(const PeerCard& card) { return concat(card.host, "\n", card.pid, "\n") + card.address; }

PeerCard decode(const std::string& value, const std::string& key) {
  size_t host_end = value.find('\n');
  size_t pid_end = host_end == std::string::npos ? std::string::npos : value.find('\n', host_end + 1);
  if (pid_end != std::string::npos && pid_end + 1 < value.size()) {
    std::string pid = value.substr(host_end + 1, pid_end - host_end - 1);
    char* parsed_end = nullptr;
    long number = std::strtol(pid.c_str(), &parsed_end, 10);
    if (!pid.empty() && *parsed_end == '\0' && number > 0) {
      return PeerCard{value.substr(0, host_end), static_cast<pid_t>(number), value.substr(pid_end + 1)};
    }
  }
  fail(Status::kTransport, concat("the UCX address under \"", key, "\" in the rendezvous store is malformed (",
                                  value.size(), " bytes); is every rank running the same tutti version?"));
}

// How long one lookup waits in the store before it asks again: a peer may publish its
// address long after this rank first sends to it (it is still starting), and a parked
// request should not outlive its transport by much.
constexpr int64_t kLookUpSliceMs = 10000;
// How long the usual peers' cards are waited for together: every rank publishes its
// card right after the meeting, before its first collective, so one still missing
// after this is late (descheduled, or never coming), and the others are not held up
// for it any longer.
constexpr int64_t kUsualWaitMs = 1000;

// Cards from the store, read when the transport first needs them. The first lookup of
// one of the usual peers reads all of theirs in one MULTI_GET: an algorithm that walks
// its partners step by step (recursive doubling, log N steps) would otherwise wait a
// round trip to the store at each step of its first call, and the store would serve a
// request per card. Other peers are read one key each.
// The lookups' callbacks run on the store client's loop thread and may outlive the
// directory; they hold the shared state, whose `open` flag the directory clears.
class StoreDirectory final : public PeerDirectory {
 public:
  StoreDirectory(store::Client& store, std::string prefix, int rank, int size)
      : state_(std::make_shared<State>(store, std::move(prefix), usual_peers(rank, size))) {}
  ~StoreDirectory() override {
    std::lock_guard<std::recursive_mutex> lock(state_->mutex);
    state_->open = false;
  }

  void look_up(int peer, Found found) override {
    if (state_->usual.count(peer) == 0) return ask(state_, peer, std::move(found));
    std::string card;
    Usual was;
    {
      std::lock_guard<std::recursive_mutex> lock(state_->mutex);
      if (!state_->open) return;
      was = state_->usual_state;
      if (was == Usual::kRead) {
        card = state_->read.at(peer);
      } else if (was != Usual::kEach) {
        state_->waiting[peer] = std::move(found);
        state_->usual_state = Usual::kAsked;
      }
    }
    if (was == Usual::kRead) return answer(std::move(found), Status::kOk, "", card, key_of(state_->prefix, peer));
    if (was == Usual::kEach) return ask(state_, peer, std::move(found));
    if (was == Usual::kUnasked) ask_usual(state_);
  }

 private:
  // The usual peers' cards: not asked for yet, asked for together, read, or read one
  // key each (the batch waited kUsualWaitMs for a peer still without a card).
  enum class Usual { kUnasked, kAsked, kRead, kEach };

  struct State {
    State(store::Client& client, std::string key_prefix, std::set<int> usual_peers)
        : store(client), prefix(std::move(key_prefix)), usual(std::move(usual_peers)) {}
    store::Client& store;
    const std::string prefix;
    const std::set<int> usual;
    // Recursive: a client that has failed answers a request at once, in the caller's
    // thread, and the answer takes the lock the ask holds.
    std::recursive_mutex mutex;
    bool open = true;                           // guarded by mutex: whether the transport still wants answers
    Usual usual_state = Usual::kUnasked;        // guarded by mutex
    std::unordered_map<int, Found> waiting;     // guarded by mutex: usual peers looked up, while asked
    std::unordered_map<int, std::string> read;  // guarded by mutex: their cards, once read
  };

  static void answer(Found found, Status status, const std::string& message, const std::string& value,
                     const std::string& key) {
    if (status != Status::kOk) return found(status, message, PeerCard{});
    try {
      found(Status::kOk, "", decode(value, key));
    } catch (const Error& e) {
      found(e.status(), e.what(), PeerCard{});
    }
  }

  static void ask(const std::shared_ptr<State>& state, int peer, Found found) {
    std::lock_guard<std::recursive_mutex> lock(state->mutex);
    if (!state->open) return;
    // Asked under the lock, so that no lookup starts once the directory (and with it the
    // communicator, which owns the store client) is going.
    std::string key = key_of(state->prefix, peer);
    state->store.get_async(key, kLookUpSliceMs,
                           [state, peer, key, found = std::move(found)](Status status, const std::string& message,
                                                                        const std::string& value) mutable {
                             if (status == Status::kTimeout) return ask(state, peer, std::move(found));
                             answer(std::move(found), status, message, value, key);
                           });
  }

  // One MULTI_GET of the usual peers' cards; each lookup made meanwhile, and each made
  // later, is answered from what it read. If one of them has no card yet after
  // kUsualWaitMs, they are read one key each from then on, so that a late peer does not
  // hold up the lookups of the others.
  static void ask_usual(const std::shared_ptr<State>& state) {
    std::lock_guard<std::recursive_mutex> lock(state->mutex);
    if (!state->open) return;
    store::protocol::Request request;
    request.op = store::protocol::Op::kMultiGet;
    for (int peer : state->usual) request.keys.push_back(key_of(state->prefix, peer));
    request.number = kUsualWaitMs;
    state->store.request_async(std::move(request), [state](const store::protocol::Reply& reply, bool lost) {
      const bool late = !lost && reply.status == Status::kTimeout;
      const bool read = !lost && reply.status == Status::kOk && reply.values.size() == state->usual.size();
      std::unordered_map<int, Found> waiting;
      {
        std::lock_guard<std::recursive_mutex> answered(state->mutex);
        if (!state->open) return;
        if (read) {
          size_t i = 0;
          for (int peer : state->usual) state->read[peer] = reply.values[i++];
        }
        // After a failure, a later lookup asks again.
        state->usual_state = read ? Usual::kRead : late ? Usual::kEach : Usual::kUnasked;
        waiting.swap(state->waiting);
      }
      for (auto& [peer, found] : waiting) {
        if (late) {
          ask(state, peer, std::move(found));
        } else if (read) {
          answer(std::move(found), Status::kOk, "", state->read.at(peer), key_of(state->prefix, peer));
        } else {
          std::string why = lost || reply.status != Status::kOk ? reply.message
                                                                : concat("the store answered ", reply.values.size(),
                                                                         " cards for ", state->usual.size());
          answer(std::move(found),
                 lost                          ? Status::kPeerLost
                 : reply.status == Status::kOk ? Status::kTransport
                                               : reply.status,
                 why, "", key_of(state->prefix, peer));
        }
      }
    });
  }

  std::shared_ptr<State> state_;
};

}  // namespace

std::set<int> usual_peers(int rank, int size) {
  std::set<int> peers;
  if (size > 1) {
    peers.insert((rank + 1) % size);
    peers.insert((rank + size - 1) % size);
  }
  for (int bit = 1; bit < size; bit <<= 1) {
    if ((rank ^ bit) < size) peers.insert(rank ^ bit);
  }
  peers.erase(rank);
  return peers;
}

std::unique_ptr<Transport> connect(store::Client& store, const std::string& prefix, int rank, int size,
                                   const std::string& where) {
  if (size < 1 || size > kMaxRanks || rank < 0 || rank >= size) {
    fail(Status::kInvalidArgument,
         concat("UCX connect on ", where, ": rank ", rank, " of size ", size,
                " is out of range; the UCX transport takes 1 to ", kMaxRanks, " ranks, each in [0, size - 1]"));
  }
  auto transport = std::make_unique<WorkerTransport>(Context::shared(), rank, size, where,
                                                     std::make_unique<StoreDirectory>(store, prefix, rank, size));
  // Not waited for: a peer's lookup waits at the store until the card is there, and a
  // connection that breaks fails this rank's next store call as well.
  std::string key = key_of(prefix, rank);
  store.set_async(key, encode(transport->card()),
                  [key, where](Status status, const std::string& message, const std::string&) {
                    if (status == Status::kOk || status == Status::kAborted) return;
                    log::error(where, ": this rank's UCX address could not be published under \"", key, "\": ", message,
                               "; the ranks that send to it or receive from it will time out");
                  });
  return transport;
}

}  // namespace tutti::transport::ucx
