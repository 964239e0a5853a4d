#include "runtime/transport/ucx/connect.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
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

// Cards from the store, one key per peer, read when the transport first needs them.
// The lookups' callbacks run on the store client's loop thread and may outlive the
// directory; they hold the shared state, whose `open` flag the directory clears.
class StoreDirectory final : public PeerDirectory {
 public:
  StoreDirectory(store::Client& store, std::string prefix)
      : state_(std::make_shared<State>(store, std::move(prefix))) {}
  ~StoreDirectory() override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->open = false;
  }

  void look_up(int peer, Found found) override { ask(state_, peer, std::move(found)); }

 private:
  struct State {
    State(store::Client& client, std::string key_prefix) : store(client), prefix(std::move(key_prefix)) {}
    store::Client& store;
    const std::string prefix;
    std::mutex mutex;
    bool open = true;  // guarded by mutex: whether the transport still wants answers
  };

  static void ask(const std::shared_ptr<State>& state, int peer, Found found) {
    std::lock_guard<std::mutex> lock(state->mutex);
    if (!state->open) return;
    // Asked under the lock, so that no lookup starts once the directory (and with it the
    // communicator, which owns the store client) is going.
    std::string key = key_of(state->prefix, peer);
    state->store.get_async(key, kLookUpSliceMs,
                           [state, peer, key, found = std::move(found)](Status status, const std::string& message,
                                                                        const std::string& value) mutable {
                             if (status == Status::kTimeout) return ask(state, peer, std::move(found));
                             if (status != Status::kOk) return found(status, message, PeerCard{});
                             try {
                               found(Status::kOk, "", decode(value, key));
                             } catch (const Error& e) {
                               found(e.status(), e.what(), PeerCard{});
                             }
                           });
  }

  std::shared_ptr<State> state_;
};

}  // namespace

std::unique_ptr<Transport> connect(store::Client& store, const std::string& prefix, int rank, int size,
                                   const std::string& where) {
  if (size < 1 || size > kMaxRanks || rank < 0 || rank >= size) {
    fail(Status::kInvalidArgument,
         concat("UCX connect on ", where, ": rank ", rank, " of size ", size,
                " is out of range; the UCX transport takes 1 to ", kMaxRanks, " ranks, each in [0, size - 1]"));
  }
  auto transport = std::make_unique<WorkerTransport>(Context::shared(), rank, size, where,
                                                     std::make_unique<StoreDirectory>(store, prefix));
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
