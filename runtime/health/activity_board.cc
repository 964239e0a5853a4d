#include "runtime/health/activity_board.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/loss_event.h"

namespace tutti::health {
namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string encode(const Activity& activity) {
  return concat(activity.seq, " ", activity.running ? 1 : 0, " ", activity.since_ms, " ",
                activity.name.empty() ? "-" : activity.name);
}

std::optional<Activity> decode_activity(const std::string& text) {
  unsigned long long seq = 0;
  long long since = 0;
  int running = 0;
  char name[32] = {0};
  if (sscanf(text.c_str(), "%llu %d %lld %31s", &seq, &running, &since, name) != 4) return std::nullopt;
  Activity activity;
  activity.seq = static_cast<uint32_t>(seq);
  activity.running = running != 0;
  activity.since_ms = since;
  activity.name = name;
  return activity;
}

std::string describe(const Activity& activity) {
  if (activity.seq == 0) return "idle, before any collective";
  if (activity.running) return concat("in ", activity.name, " #", activity.seq);
  return concat("idle after ", activity.name, " #", activity.seq);
}

ActivityBoard::ActivityBoard(store::Client& store, std::string prefix, int rank, int size)
    : store_(store), prefix_(std::move(prefix)), rank_(rank), size_(size), since_ms_(wall_ms()) {}

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

std::string ActivityBoard::current() const {
  Activity activity;
  activity.since_ms = since_ms_.load(std::memory_order_acquire);
  activity.seq = seq_.load(std::memory_order_relaxed);
  activity.running = running_.load(std::memory_order_relaxed);
  activity.name = name_.load(std::memory_order_relaxed);
  return encode(activity);
}

std::string ActivityBoard::absent_from(uint32_t seq, Deadline deadline) {
  std::vector<std::string> keys;
  for (int rank = 0; rank < size_; ++rank) keys.push_back(store::activity_key(prefix_, rank));
  std::string report;
  try {
    store_.set(keys[rank_], current(), deadline);
    std::vector<bool> present = store_.check(keys, deadline);
    int64_t now = wall_ms();
    for (int rank = 0; rank < size_; ++rank) {
      if (rank == rank_) continue;
      std::string state;
      if (present[rank]) {
        auto activity = decode_activity(store_.get(keys[rank], deadline));
        if (!activity || activity->seq >= seq) continue;
        double seconds = static_cast<double>(now - activity->since_ms) / 1000.0;
        char elapsed[32];
        snprintf(elapsed, sizeof elapsed, "%.1f s", seconds < 0 ? 0.0 : seconds);
        state = concat("last seen ", describe(*activity), " for ", elapsed);
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

}  // namespace tutti::health
