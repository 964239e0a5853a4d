#include "runtime/device/watchdog.h"

#include <uv.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"

namespace tutti::device {
namespace {

// How long ~Watchdog waits for the loop to close its timer.
constexpr int64_t kCloseMs = 2000;

}  // namespace

struct Watchdog::State : std::enable_shared_from_this<State> {
  State(WatchdogSetup s, Watched& w) : setup(std::move(s)), watched(w) {
    // The loop's callbacks may drop the last reference to the state, on the loop
    // thread, which must never drop the last reference to the loop (it would join
    // itself): the Watchdog holds that one.
    loop = setup.loop.get();
    setup.loop.reset();
  }

  void arm_on_loop();
  void tick_on_loop();
  // Moves every pending operation out and starts the incident's thread. Loop thread.
  void incident_on_loop(Status status, std::string why, size_t timed_out);
  void close_on_loop();

  WatchdogSetup setup;  // its loop moved to the Watchdog
  loop::Loop* loop;
  Watched& watched;
  uv_timer_t timer;
  bool timer_open = false;            // loop thread only
  bool closing = false;               // loop thread only
  std::shared_ptr<State> keep_alive;  // while the timer is open
  std::promise<void> closed;

  mutable std::mutex mutex;
  std::vector<Watch> pending;  // in issue order; guarded by mutex
  std::condition_variable drained;
  std::shared_ptr<std::atomic<bool>> broken = std::make_shared<std::atomic<bool>>(false);
  Status broken_status = Status::kOk;  // set before broken
  std::string broken_why;              // set before broken
  std::thread incident;                // joined by ~Watchdog
};

void Watchdog::State::arm_on_loop() {
  if (closing) return;
  if (!timer_open) {
    uv_timer_init(loop->uv(), &timer);
    timer.data = this;
    timer_open = true;
    keep_alive = shared_from_this();
  }
  if (uv_is_active(reinterpret_cast<uv_handle_t*>(&timer))) return;
  uv_timer_start(
      &timer, [](uv_timer_t* handle) { static_cast<State*>(handle->data)->tick_on_loop(); },
      static_cast<uint64_t>(setup.poll_ms), static_cast<uint64_t>(setup.poll_ms));
}

void Watchdog::State::tick_on_loop() {
  std::unique_lock<std::mutex> lock(mutex);
  // In order: operations on one stream finish in order, so the first unfinished one
  // is the oldest and the first whose deadline can pass.
  size_t kept = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    Watch& entry = pending[i];
    if (!entry.work->done() && entry.fence->reached()) entry.work->complete(Status::kOk);
    if (entry.work->done()) continue;
    if (kept != i) pending[kept] = std::move(entry);
    ++kept;
  }
  pending.resize(kept);
  if (pending.empty()) {
    uv_timer_stop(&timer);
    drained.notify_all();
    return;
  }
  lock.unlock();
  std::string error = watched.async_error();
  if (!error.empty()) return incident_on_loop(Status::kTransport, concat("NCCL reported ", error), SIZE_MAX);
  if (setup.fault->raised()) return incident_on_loop(setup.fault->status(), setup.fault->why(), SIZE_MAX);
  lock.lock();
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].deadline.expired()) {
      lock.unlock();
      return incident_on_loop(Status::kTimeout, "", i);
    }
  }
}

void Watchdog::State::incident_on_loop(Status status, std::string why, size_t timed_out) {
  std::vector<Watch> failing;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (broken->load(std::memory_order_relaxed)) return;
    if (timed_out != SIZE_MAX) {
      const Watch& late = pending[timed_out];
      why = concat(late.label, " timed out after ", late.timeout_ms, " ms on the GPU");
    }
    broken_status = status;
    broken_why = why;
    // Before the abort: an aborted kernel lets the events behind it pass, which must
    // not read as success (fences check broken).
    broken->store(true, std::memory_order_release);
    failing.swap(pending);
  }
  uv_timer_stop(&timer);
  auto self = shared_from_this();
  incident = std::thread([self, status, why, timed_out, failing = std::move(failing)] {
    // The operations fail before the abort, not after it: ncclCommAbort waits for
    // whatever holds the stream ahead of NCCL's kernels (seen on an H100: a host
    // function held it for 60 s, and the abort with it), and a wait must end at its
    // bound. Work on the stream after them still runs after them.
    std::string report;
    if (timed_out != SIZE_MAX && self->setup.desync_report) report = self->setup.desync_report(failing[timed_out].seq);
    const char* after =
        "; the NCCL communicator is aborted (ncclCommAbort stops its kernels): destroy this "
        "communicator and create a new one";
    for (size_t i = 0; i < failing.size(); ++i) {
      const Watch& entry = failing[i];
      std::string message;
      if (i == timed_out) {
        message = concat(why, report.empty() ? "" : ". ", report,
                         ". Check that every rank makes the same collective calls in the same order, or raise "
                         "op_timeout_ms (TUTTI_OP_TIMEOUT_MS)",
                         after);
      } else if (timed_out != SIZE_MAX) {
        message = concat(entry.label, " stopped: ", why, after);
      } else {
        message = concat(entry.label, " failed: ", why, after);
      }
      if (i == 0 || i == timed_out) log::warn(message);
      entry.work->complete(status, message);
    }
    {
      std::lock_guard<std::mutex> lock(self->mutex);
      self->drained.notify_all();
    }
    self->watched.abort();
  });
}

void Watchdog::State::close_on_loop() {
  closing = true;
  if (!timer_open) {
    closed.set_value();
    return;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&timer), [](uv_handle_t* handle) {
    auto* state = static_cast<State*>(handle->data);
    state->closed.set_value();
    state->keep_alive.reset();  // may destroy the state: last
  });
}

Watchdog::Watchdog(WatchdogSetup setup, Watched& watched)
    : loop_(setup.loop), state_(std::make_shared<State>(std::move(setup), watched)) {}

Watchdog::~Watchdog() {
  auto closed = state_->closed.get_future();
  auto state = state_;
  if (loop_->post([state] { state->close_on_loop(); })) {
    if (closed.wait_for(std::chrono::milliseconds(kCloseMs)) != std::future_status::ready) {
      log::warn("the GPU watchdog's timer did not close within ", kCloseMs, " ms; the event loop is stuck");
    }
  }
  if (state_->incident.joinable()) state_->incident.join();
  std::vector<Watch> left;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    left.swap(state_->pending);
  }
  for (Watch& entry : left) {
    entry.work->complete(Status::kAborted, concat(entry.label,
                                                  " was still running on the GPU when its communicator "
                                                  "was destroyed"));
  }
}

void Watchdog::watch(Watch entry) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->broken->load(std::memory_order_relaxed)) rethrow(entry.label.c_str());
    state_->pending.push_back(std::move(entry));
    if (state_->pending.size() > 1) return;  // the timer already runs
  }
  auto state = state_;
  loop_->post([state] { state->arm_on_loop(); });
}

bool Watchdog::broken() const { return state_->broken->load(std::memory_order_acquire); }

std::shared_ptr<const std::atomic<bool>> Watchdog::broken_flag() const { return state_->broken; }

void Watchdog::rethrow(const char* api) const {
  fail(state_->broken_status == Status::kOk ? Status::kAborted : state_->broken_status,
       concat(api, ": the communicator's GPU side is unusable: ", state_->broken_why,
              "; destroy this communicator and create a new one"));
}

bool Watchdog::drain(Deadline deadline) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  return state_->drained.wait_until(lock, deadline.at(), [this] { return state_->pending.empty(); });
}

}  // namespace tutti::device
