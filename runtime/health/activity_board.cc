#include "runtime/health/activity_board.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/error.h"
#include "runtime/store/loss_event.h"

namespace tutti::health {
namespace {

// Wall clock in ms since the epoch, from the kernel's coarse clock, for what other
// ranks read: their monotonic clocks count from other epochs.
int64_t coarse_wall_ms() {
  timespec now;
  clock_gettime(CLOCK_REALTIME_COARSE, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

}  // namespace

std::string encode(const Activity& activity) {
  return concat(activity.seq, " ", activity.running ? 1 : 0, " ", activity.since_ms, " ",
                activity.name.empty() ? "-" : activity.name, " ", activity.waiting.empty() ? "-" : activity.waiting,
                " ", static_cast<int32_t>(activity.status));
}

std::optional<Activity> decode_activity(const std::string& text) {
  unsigned long long seq = 0;
  long long since = 0;
  int running = 0;
  char name[32] = {0};
  char waiting[48] = {0};
  int status = 0;
  if (sscanf(text.c_str(), "%llu %d %lld %31s %47s %d", &seq, &running, &since, name, waiting, &status) != 6) {
    return std::nullopt;
  }
  Activity activity;
  activity.status = static_cast<Status>(status);
  activity.seq = static_cast<uint32_t>(seq);
  activity.running = running != 0;
  activity.since_ms = since;
  activity.name = name;
  if (strcmp(waiting, "-") != 0) activity.waiting = waiting;
  return activity;
}

std::string describe(const Activity& activity) {
  std::string last = activity.seq == 0 ? std::string("any collective") : concat(activity.name, " #", activity.seq);
  char kind[8] = {0};
  int peer = 0, tag = 0;
  if (sscanf(activity.waiting.c_str(), "%7[a-z]/%d/%d", kind, &peer, &tag) == 3) {
    bool receiving = strcmp(kind, "recv") == 0;
    return concat("in ", kind, receiving ? " from" : " to", " rank ", peer, " (tag ", tag, "), ",
                  activity.seq == 0 ? "before " : "after ", last);
  }
  if (activity.seq == 0) return "idle, before any collective";
  if (activity.running) return concat("in ", last);
  if (activity.status != Status::kOk)
    return concat("idle after ", last, ", which failed (", status_word(activity.status), ")");
  return concat("idle after ", last);
}

ActivityBoard::ActivityBoard(store::Client& store, std::string prefix, int rank, int size)
    : store_(store), prefix_(std::move(prefix)), rank_(rank), size_(size), since_ms_(coarse_now_ms()) {}

void ActivityBoard::started(uint32_t seq, const char* name, int64_t now_ms) {
  name_.store(name, std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_relaxed);
  running_.store(true, std::memory_order_relaxed);
  since_ms_.store(now_ms, std::memory_order_release);
  history_.started(seq, now_ms);
}

void ActivityBoard::started_now(uint32_t seq, const OpFacts& facts, int64_t now_ms) {
  name_.store(facts.name, std::memory_order_relaxed);
  seq_.store(seq, std::memory_order_relaxed);
  running_.store(true, std::memory_order_relaxed);
  since_ms_.store(now_ms, std::memory_order_release);
  history_.issued(seq, facts, now_ms, true);
}

void ActivityBoard::finished(Status status) {
  status_.store(status, std::memory_order_relaxed);
  running_.store(false, std::memory_order_relaxed);
  int64_t now = coarse_now_ms();
  since_ms_.store(now, std::memory_order_release);
  history_.finished(seq_.load(std::memory_order_relaxed), status, now);
}

void ActivityBoard::waiting(const char* name, int peer, int tag) {
  waiting_peer_.store(peer, std::memory_order_relaxed);
  waiting_tag_.store(tag, std::memory_order_relaxed);
  waiting_name_.store(name, std::memory_order_relaxed);
  since_ms_.store(coarse_now_ms(), std::memory_order_release);
}

void ActivityBoard::done_waiting() {
  waiting_name_.store(nullptr, std::memory_order_relaxed);
  since_ms_.store(coarse_now_ms(), std::memory_order_release);
}

std::string ActivityBoard::current() const {
  Activity activity;
  // Other ranks, maybe on other nodes, compare it with their own wall clock.
  activity.since_ms = since_ms_.load(std::memory_order_acquire) + coarse_wall_ms() - coarse_now_ms();
  activity.seq = seq_.load(std::memory_order_relaxed);
  activity.running = running_.load(std::memory_order_relaxed);
  activity.name = name_.load(std::memory_order_relaxed);
  activity.status = status_.load(std::memory_order_relaxed);
  if (const char* waiting = waiting_name_.load(std::memory_order_relaxed)) {
    activity.waiting = concat(waiting, "/", waiting_peer_.load(std::memory_order_relaxed), "/",
                              waiting_tag_.load(std::memory_order_relaxed));
  }
  return encode(activity);
}

std::string ActivityBoard::absent_from(uint32_t seq, Deadline deadline, std::string* failed) {
  std::vector<std::string> keys;
  keys.reserve(size_);
  for (int rank = 0; rank < size_; ++rank) keys.push_back(store::activity_key(prefix_, rank));
  std::string report;
  try {
    store_.set(keys[rank_], current(), deadline);
    std::vector<bool> present = store_.check(keys, deadline);
    int64_t now = coarse_wall_ms();
    for (int rank = 0; rank < size_; ++rank) {
      if (rank == rank_) continue;
      std::string state;
      if (present[rank]) {
        auto activity = decode_activity(store_.get(keys[rank], deadline));
        if (activity && activity->seq == seq && !activity->running && activity->status != Status::kOk) {
          *failed += concat(failed->empty() ? "" : ", ", rank, " (", status_word(activity->status), ")");
        }
        if (!activity || activity->seq >= seq) continue;
        state = concat("last seen ", describe(*activity), ", for ", duration_text(now - activity->since_ms));
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

std::string ActivityBoard::whereabouts(int rank, Deadline deadline) {
  const std::string key = store::activity_key(prefix_, rank);
  try {
    store_.set(store::activity_key(prefix_, rank_), current(), deadline);
    if (!store_.check({key}, deadline)[0])
      return "not reporting: it has not reached this communicator's calls, or is gone";
    auto activity = decode_activity(store_.get(key, deadline));
    if (!activity) return "unknown (its report could not be read)";
    return concat(describe(*activity), " (for ", duration_text(coarse_wall_ms() - activity->since_ms), ")");
  } catch (const Error& error) {
    return concat("unknown (the store could not be read: ", error.what(), ")");
  }
}

}  // namespace tutti::health
