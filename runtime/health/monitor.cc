#include "runtime/health/monitor.h"

#include <uv.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <future>
#include <mutex>

#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/common/wall_clock.h"
#include "runtime/store/loss_event.h"
#include "runtime/trace/trace.h"

namespace tutti::health {
namespace {

// A wait on the next loss event is renewed this often; it costs the store nothing
// while parked.
constexpr int64_t kWatchMs = 3600 * 1000;
// How long ~Monitor gives the loop to close the timer.
constexpr int64_t kLeaveMs = 2000;

// "host h, pid 123" from "h:123".
std::string host_and_pid(const std::string& identity) {
  auto colon = identity.rfind(':');
  if (colon == std::string::npos) return concat("\"", identity, "\"");
  return concat("host ", identity.substr(0, colon), ", pid ", identity.substr(colon + 1));
}

}  // namespace

struct Monitor::State : std::enable_shared_from_this<State> {
  explicit State(MonitorSetup s) : setup(std::move(s)) {}

  // Loop thread only.
  void start_on_loop();
  void tick_on_loop();
  void send_heartbeat_on_loop();
  void watch_on_loop();
  void heartbeat_answered_on_loop(Status status, const std::string& message, const std::string& store_clock);
  void trace_heartbeat_on_loop(const std::string& store_clock);
  void event_on_loop(Status status, const std::string& message, const std::string& value);
  void lose_store_on_loop(const std::string& why);
  void stop_on_loop();
  // Runs fn(state) on the loop, if it still runs; for the store's callbacks, which may
  // come on another thread (the one that shuts the client down).
  template <typename Fn>
  void on_loop(Fn fn) {
    auto self = shared_from_this();
    setup.loop->post([self, fn = std::move(fn)]() mutable {
      if (!self->stopping) fn(*self);
    });
  }

  MonitorSetup setup;
  uv_timer_t timer;
  bool stopping = false;
  std::atomic<bool> store_lost{false};  // written on the loop thread, read by ~Comm
  bool heartbeat_in_flight = false;
  bool said_late = false;       // this heartbeat's lateness is in the trace
  uint64_t heartbeat_sent = 0;  // trace::stamp()
  int64_t heartbeat_sent_wall_us = 0;
  double best_clock_rtt_us = 1e300;  // of the clock samples given to the trace
  uint64_t last_answer_ms = 0;       // loop clock
  uint64_t last_tick_ms = 0;         // loop clock
  int64_t next_event = 1;
  std::shared_ptr<State> keep_alive;  // while the timer is open
  std::promise<void> closed;

  mutable std::mutex mutex;
  std::vector<int> lost;  // guarded by mutex
};

// The first heartbeat goes out at once, with this communicator's timeout and activity
// (the meeting's watch has the init timeout), and is answered as every other one.
void Monitor::State::start_on_loop() {
  keep_alive = shared_from_this();
  uv_timer_init(setup.loop->uv(), &timer);
  timer.data = this;
  last_answer_ms = last_tick_ms = uv_now(setup.loop->uv());
  auto interval = static_cast<uint64_t>(setup.interval_ms);
  uv_timer_start(
      &timer, [](uv_timer_t* handle) { static_cast<State*>(handle->data)->tick_on_loop(); }, interval, interval);
  send_heartbeat_on_loop();
  watch_on_loop();
}

void Monitor::State::tick_on_loop() {
  if (stopping || store_lost) return;
  uint64_t now = uv_now(setup.loop->uv());
  // A late tick means this process's loop did not run meanwhile (stopped, swapped out,
  // starved): the store's answer may sit unread in the socket, so that time is not the
  // store's silence. If the store lives in this process and was frozen with it, it
  // says so itself, in a loss event for this rank.
  uint64_t due = last_tick_ms + static_cast<uint64_t>(setup.interval_ms);
  if (now > due) last_answer_ms = std::min(now, last_answer_ms + (now - due));
  last_tick_ms = now;
  // The trace's rings drain here, on the loop, between heartbeats (trace/trace.h).
  trace::flush();
  if (heartbeat_in_flight) {
    int64_t silent = static_cast<int64_t>(now - last_answer_ms);
    if (!said_late) {
      said_late = true;
      trace::instant(trace::kHealthTrack, "heartbeat late", "health",
                     concat("the store has not answered the heartbeat for ", duration_text(silent)));
    }
    if (silent > setup.timeout_ms) {
      lose_store_on_loop(concat("it has not answered for ", duration_text(silent), " (heartbeat timeout ",
                                duration_text(setup.timeout_ms), "): its process is frozen or cut off"));
    }
    return;
  }
  send_heartbeat_on_loop();
}

void Monitor::State::send_heartbeat_on_loop() {
  heartbeat_in_flight = true;
  said_late = false;
  if (trace::on()) {
    heartbeat_sent = trace::stamp();
    heartbeat_sent_wall_us = wall_clock_us();
  }
  setup.store->heartbeat_async(
      setup.timeout_ms, setup.board->current(),
      [self = shared_from_this()](Status status, const std::string& message, const std::string& store_clock) {
        self->on_loop([status, message, store_clock](State& state) {
          state.heartbeat_answered_on_loop(status, message, store_clock);
        });
      });
}

// The heartbeat as a span, and, when its round trip is the shortest yet, what it says
// of this process's clock against the store's: the store read its clock about half a
// round trip after this one sent.
void Monitor::State::trace_heartbeat_on_loop(const std::string& store_clock) {
  if (heartbeat_sent == 0) return;  // sent before tracing began
  trace::Event event;
  event.phase = trace::Phase::kComplete;
  event.stamp = heartbeat_sent;
  event.length = trace::stamp() - heartbeat_sent;
  event.track = trace::kHealthTrack;
  event.name = "heartbeat";
  event.cat = "health";
  const double rtt_us = trace::micros_between(heartbeat_sent, heartbeat_sent + event.length);
  trace::record(event);
  if (store_clock.empty() || rtt_us > best_clock_rtt_us) return;
  best_clock_rtt_us = rtt_us;
  const double store_us = std::strtod(store_clock.c_str(), nullptr);
  trace::clock_sample(store_us - (static_cast<double>(heartbeat_sent_wall_us) + rtt_us / 2), rtt_us);
}

void Monitor::State::heartbeat_answered_on_loop(Status status, const std::string& message,
                                                const std::string& store_clock) {
  heartbeat_in_flight = false;
  if (status == Status::kOk) {
    if (trace::on()) trace_heartbeat_on_loop(store_clock);
    last_answer_ms = uv_now(setup.loop->uv());
  } else if (status != Status::kAborted) {  // kAborted: the client was shut down here
    lose_store_on_loop(message);
  }
}

void Monitor::State::watch_on_loop() {
  setup.store->get_async(
      store::lost_key(setup.prefix, next_event), kWatchMs,
      [self = shared_from_this()](Status status, const std::string& message, const std::string& value) {
        self->on_loop([status, message, value](State& state) { state.event_on_loop(status, message, value); });
      });
}

void Monitor::State::event_on_loop(Status status, const std::string& message, const std::string& value) {
  if (status == Status::kTimeout) return watch_on_loop();
  if (status == Status::kAborted) return;
  if (status != Status::kOk) return lose_store_on_loop(message);
  ++next_event;
  auto event = store::decode_loss_event(value);
  if (!event) {
    log::error(setup.where, ": unreadable loss event #", next_event - 1, " in the store: \"", value, "\"");
    return watch_on_loop();
  }
  std::string why;
  if (event->rank == setup.rank) {
    store_lost = true;  // the store closes this rank's connection next: no news
    why = concat("this rank was declared lost by the rendezvous store: ", event->reason,
                 "; the other ranks were told and may have gone on without it");
  } else {
    why = concat("rank ", event->rank, " (", host_and_pid(event->identity), ") was lost: ", event->reason);
    // Heartbeats sample the activity, so say how old the sample was.
    if (auto activity = decode_activity(event->activity)) {
      why +=
          concat("; its last report, ", duration_text(event->activity_age_ms), " before, had it ", describe(*activity));
    }
  }
  log::warn(setup.where, ": ", why);
  trace::instant(trace::kHealthTrack, "rank lost", "health", concat(setup.where, ": ", why));
  setup.on_failure(Status::kPeerLost, why);
  // Listed only once the communicator is stopped: a caller that sees the rank in
  // lost_ranks() then finds every call refused, never one that starts and then fails.
  {
    std::lock_guard<std::mutex> lock(mutex);
    lost.push_back(static_cast<int>(event->rank));
  }
  watch_on_loop();
}

void Monitor::State::lose_store_on_loop(const std::string& why) {
  if (store_lost) return;
  store_lost = true;
  std::string message =
      concat("the rendezvous store at ", setup.store->address(), ", hosted by ", setup.store_owner, ", is lost: ", why);
  log::warn(setup.where, ": ", message);
  trace::instant(trace::kHealthTrack, "store lost", "health", concat(setup.where, ": ", message));
  setup.on_failure(Status::kPeerLost, message);
}

void Monitor::State::stop_on_loop() {
  if (stopping) return;
  stopping = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer), [](uv_handle_t* handle) {
    auto* state = static_cast<State*>(handle->data);
    // The state lets go of itself before ~Monitor wakes: woken, its caller may drop
    // every other reference to the loop at once, and a state freed here after that
    // would destroy the loop on the loop's own thread (which cannot join itself).
    // ~Monitor holds the state while it waits, so this frees nothing then.
    std::promise<void> done = std::move(state->closed);
    state->keep_alive.reset();  // may free *state, if ~Monitor gave up waiting
    done.set_value();
  });
}

std::unique_ptr<Monitor> Monitor::start(MonitorSetup setup) {
  auto state = std::make_shared<State>(std::move(setup));
  if (!state->setup.loop->post([state] { state->start_on_loop(); })) {
    fail(Status::kAborted, concat(state->setup.where, ": the event loop has stopped; no failure detector can start"));
  }
  return std::unique_ptr<Monitor>(new Monitor(std::move(state)));
}

Monitor::~Monitor() {
  auto deadline = Deadline::after_ms(kLeaveMs);
  // The timer stops first, so that no heartbeat sent after the leave below re-arms
  // the store's watch.
  auto closed = state_->closed.get_future();
  auto state = state_;
  if (state->setup.loop->post([state] { state->stop_on_loop(); }) && !state->setup.loop->on_loop_thread() &&
      closed.wait_until(deadline.at()) != std::future_status::ready) {
    log::error(state->setup.where, ": the event loop did not stop the failure detector within ", kLeaveMs,
               " ms; leaving it to the loop");
  }
  // Not waited for: a store that is gone watches nobody, and what this rank sends next
  // on the connection (the meeting's leave) comes after it.
  state->setup.store->heartbeat_async(
      0, state->setup.board->current(),
      [where = state->setup.where](Status status, const std::string& message, const std::string&) {
        if (status != Status::kOk && status != Status::kAborted) {
          log::debug(where, ": leaving the store's watch: ", message);
        }
      });
}

bool Monitor::store_lost() const { return state_->store_lost.load(); }

std::vector<int> Monitor::lost_ranks() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lost;
}

}  // namespace tutti::health
