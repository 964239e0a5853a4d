#include "runtime/collectives/activity.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"

namespace tutti::collectives {
namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A state must hold this long before it is published: shorter ones are not what a
// timeout report needs, and skipping them keeps the store quiet.
constexpr int64_t kSettleMs = 1000;

}  // namespace

ActivityBoard::ActivityBoard(store::Client& store, std::string prefix, int rank, int size)
    : store_(store), prefix_(std::move(prefix)), rank_(rank), size_(size), since_ms_(wall_ms()) {
  thread_ = std::thread([this] { thread_main(); });
}

ActivityBoard::~ActivityBoard() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  thread_.join();
}

void ActivityBoard::started(const char* name, uint32_t seq) {
  name_.store(name, std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_relaxed);
  running_.store(true, std::memory_order_relaxed);
  since_ms_.store(wall_ms(), std::memory_order_release);
}

void ActivityBoard::finished() {
  running_.store(false, std::memory_order_relaxed);
  since_ms_.store(wall_ms(), std::memory_order_release);
}

ActivityBoard::State ActivityBoard::snapshot() const {
  return State{seq_.load(std::memory_order_relaxed), running_.load(std::memory_order_relaxed),
               name_.load(std::memory_order_relaxed)};
}

// "<seq> <running 0|1> <since ms> <name>"
std::string ActivityBoard::encode(const State& state) const {
  return concat(state.seq, " ", state.running ? 1 : 0, " ", since_ms_.load(std::memory_order_acquire), " ",
                *state.name ? state.name : "-");
}

void ActivityBoard::publish(const State& state) {
  std::string value = encode(state);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (value == published_) return;
    published_ = value;
  }
  try {
    store_.set(concat(prefix_, rank_), value, Deadline::after_ms(2000));
  } catch (const Error& error) {
    log::debug("could not publish activity: ", error.what());
  }
}

void ActivityBoard::thread_main() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.wait_for(lock, std::chrono::milliseconds(kSettleMs), [this] { return stopping_; })) {
    lock.unlock();
    int64_t since = since_ms_.load(std::memory_order_acquire);
    if (wall_ms() - since >= kSettleMs) publish(snapshot());
    lock.lock();
  }
}

std::string ActivityBoard::absent_from(uint32_t seq, Deadline deadline) {
  publish(snapshot());
  std::vector<std::string> keys;
  for (int rank = 0; rank < size_; ++rank) keys.push_back(concat(prefix_, rank));
  std::string report;
  try {
    std::vector<bool> present = store_.check(keys, deadline);
    int64_t now = wall_ms();
    for (int rank = 0; rank < size_; ++rank) {
      if (rank == rank_) continue;
      std::string state;
      if (present[rank]) {
        unsigned long long their_seq = 0, since = 0;
        int running = 0;
        char name[32] = {0};
        std::string value = store_.get(keys[rank], deadline);
        if (sscanf(value.c_str(), "%llu %d %llu %31s", &their_seq, &running, &since, name) != 4) continue;
        if (their_seq >= seq) continue;
        double seconds = static_cast<double>(now - static_cast<int64_t>(since)) / 1000.0;
        char elapsed[32];
        snprintf(elapsed, sizeof elapsed, "%.1f s", seconds < 0 ? 0.0 : seconds);
        if (their_seq == 0) {
          state = concat("last seen idle, before any collective, for ", elapsed);
        } else if (running) {
          state = concat("last seen in ", name, " #", their_seq, " for ", elapsed);
        } else {
          state = concat("last seen idle after ", name, " #", their_seq, " for ", elapsed);
        }
      } else {
        state = "no report: it has not reached this communicator's collectives, or is gone";
      }
      report += concat(report.empty() ? "" : ", ", rank, " (", state, ")");
    }
  } catch (const Error& error) {
    return concat("unknown (the store could not be read: ", error.what(), ")");
  }
  return report;
}

}  // namespace tutti::collectives
