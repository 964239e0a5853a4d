#include "runtime/transport/ucx/connect.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
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

[[noreturn]] void fail_missing(store::Client& store, const std::vector<std::string>& keys, const std::string& prefix,
                               const std::string& where, std::chrono::steady_clock::time_point start,
                               const Error& timeout) {
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  std::vector<bool> present;
  try {
    // The connect deadline has passed; a short one of its own names the ranks.
    present = store.check(keys, Deadline::after_ms(2000));
  } catch (const Error&) {
    fail(Status::kTimeout,
         concat("UCX connect on ", where, " timed out after ", waited.count(), " ms (", timeout.what(), ")"));
  }
  std::string missing;
  for (size_t rank = 0; rank < present.size(); ++rank) {
    if (!present[rank]) missing += concat(missing.empty() ? "" : ", ", rank);
  }
  fail(Status::kTimeout,
       concat("UCX connect on ", where, " timed out after ", waited.count(), " ms: rank(s) ", missing,
              " never published a worker address under \"", prefix, "ucx/\"; check that every rank creates the "
              "communicator, with the same size, or raise the timeout"));
}

}  // namespace

std::unique_ptr<Transport> connect(store::Client& store, const std::string& prefix, int rank, int size,
                                   Deadline deadline, const std::string& where) {
  if (size < 1 || size > kMaxRanks || rank < 0 || rank >= size) {
    fail(Status::kInvalidArgument, concat("UCX connect on ", where, ": rank ", rank, " of size ", size,
                                          " is out of range; the UCX transport takes 1 to ", kMaxRanks,
                                          " ranks, each in [0, size - 1]"));
  }
  auto start = std::chrono::steady_clock::now();
  auto transport = std::make_unique<WorkerTransport>(Context::shared(), rank, size, where);
  store.set(key_of(prefix, rank), encode(transport->card()), deadline);

  std::vector<std::string> keys;
  keys.reserve(size);
  for (int i = 0; i < size; ++i) keys.push_back(key_of(prefix, i));
  std::vector<std::string> values;
  try {
    values = store.multi_get(keys, deadline);
  } catch (const Error& e) {
    if (e.status() != Status::kTimeout) throw;
    fail_missing(store, keys, prefix, where, start, e);
  }
  std::vector<PeerCard> cards;
  cards.reserve(size);
  for (int i = 0; i < size; ++i) cards.push_back(decode(values.at(i), keys[i]));
  transport->set_peers(std::move(cards));
  return transport;
}

}  // namespace tutti::transport::ucx
