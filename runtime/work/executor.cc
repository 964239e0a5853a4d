#include "runtime/work/executor.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "runtime/common/error.h"

namespace tutti::work {

Executor::Executor(Hooks hooks) : hooks_(std::move(hooks)) {}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  wake_from_transport();
  if (thread_.joinable()) thread_.join();
}

void Executor::execute(Item& item) {
  bool complete = false;
  try {
    std::lock_guard<std::mutex> run(run_mutex_);
    complete = item.job(*item.work);
  } catch (const Error& error) {
    item.work->complete(error.status(), error.what());
    return;
  } catch (const std::bad_alloc&) {
    item.work->complete(Status::kNoMemory, "out of memory while running an operation");
    return;
  } catch (const std::exception& error) {
    item.work->complete(Status::kInternal, std::string("internal error: ") + error.what() + "; please report it");
    return;
  }
  if (complete) item.work->complete(Status::kOk);
}

void Executor::start_thread_locked() {
  if (thread_.joinable()) return;
  has_thread_.store(true, std::memory_order_release);
  locking_.store(true, std::memory_order_release);
  thread_ = std::thread([this] { thread_main(); });
}

void Executor::keep_progressing() {
  if (has_thread_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(queue_mutex_);
  start_thread_locked();
}

void Executor::update_queued_locked() { queued_.store(!queue_.empty()); }

void Executor::poke() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  start_thread_locked();
  if (moving_looks_left_ > 0) return;  // it looks again within kMovingMs
  poked_ = true;
  changed_.notify_all();
}

std::shared_ptr<Work> Executor::submit(Job job, std::shared_ptr<Work> work) {
  if (!work) work = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(Item{std::move(job), work});
    update_queued_locked();
    start_thread_locked();
  }
  changed_.notify_all();
  wake_from_transport();
  return work;
}

void Executor::wake_from_transport() {
  // in_transport_ is set under queue_mutex_ after the thread saw the queue empty and
  // not stopping: a change made under the lock before it is seen there, one after it
  // reads it set here.
  if (in_transport_.load()) hooks_.interrupt();
}

// An inline run claims busy_ by itself, without queue_mutex_: a small isend's
// exchange makes three runs, and the mutex taken twice for each was a tenth of its
// instructions. queue_mutex_ still guards the queue; busy_, queued_ and locked_out_
// are atomics whose sequentially consistent stores and loads pair up (this side
// stores busy_ and loads the others, the thread stores those and loads busy_ under
// the mutex), so that either a leaving run sees what the thread waits for and wakes
// it, or the thread sees the executor free.
bool Executor::enter_inline() {
  if (queued_.load()) return false;  // issued before this call: theirs is the turn
  bool idle = false;
  return busy_.compare_exchange_strong(idle, true);
}

void Executor::leave_inline() {
  // Inline runs exclude each other: no other writer while busy_ is held.
  inline_runs_.store(inline_runs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  busy_.store(false);
  // Only the thread waits on changed_: for a job it may run, or for this call to let
  // go of the run lock it found held. Otherwise there is nothing to wake it for. The
  // mutex, taken, orders the notice after the thread's check of busy_.
  if (queued_.load() || locked_out_.load()) {
    { std::lock_guard<std::mutex> lock(queue_mutex_); }
    changed_.notify_all();
  }
}

void Executor::thread_main() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  uint64_t inline_runs_seen = 0;
  while (true) {
    bool idle = false;
    if (!queue_.empty() && busy_.compare_exchange_strong(idle, true)) {
      Item item = std::move(queue_.front());
      queue_.pop_front();
      update_queued_locked();
      lock.unlock();
      execute(item);
      lock.lock();
      busy_.store(false);
      changed_.notify_all();
      continue;
    }
    if (stopping_) return;
    // Where this turn does not look, only news of a post says what is in flight. Taken
    // here, not cleared after the wait: the poke that woke this turn is its news (cleared
    // there, each poke woke a turn that saw none, and stopped looking: a wake-up for
    // every post, 2-3x the time of a 4 KiB exchange over TCP).
    bool in_flight = std::exchange(poked_, false);
    bool locked_out = false;  // an inline call held the run lock: in flight unknown
    // While the user's thread uses the communicator, its calls and waits move what is
    // in flight: look only once it has left the communicator alone since the last turn
    // (kMovingMs ago, moving), so as never to hold the transport when that thread wants
    // it (a thread that lost its core holding it kept a waiter out for milliseconds).
    const uint64_t inline_runs = inline_runs_.load(std::memory_order_relaxed);
    const bool left_alone = inline_runs == inline_runs_seen;
    inline_runs_seen = inline_runs;
    Armed armed = Armed::kUnsupported;
    if (left_alone) {
      lock.unlock();
      {
        std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
        locked_out = !run.owns_lock();
        if (run.owns_lock() && hooks_.progress_in_flight) {
          in_flight = hooks_.progress_in_flight();
          if (in_flight && hooks_.arm) armed = hooks_.arm();
        }
      }
      lock.lock();
    }
    moving_looks_left_ = in_flight ? kMovingLooks : std::max(moving_looks_left_, 1) - 1;
    if (armed == Armed::kBusy) continue;  // news already: look again at once
    if (armed == Armed::kArmed) {
      // Left alone with requests in flight: sleep in the transport, not holding it, until
      // it has news for them, for at most kMovingMs (their deadlines, the user's thread
      // coming back); submit() and the destructor interrupt it. What came meanwhile is
      // seen under the lock first.
      if (!stopping_ && !poked_ && queue_.empty()) {
        in_transport_.store(true);
        lock.unlock();
        hooks_.wait_armed(kMovingMs);
        lock.lock();
        in_transport_.store(false);
      }
      continue;
    }
    // Requests in flight, or some a moment ago, and no sleep in the transport: look
    // again in kMovingMs, not holding the transport meanwhile (a program that posts one
    // send or receive after another then pokes nobody awake). Otherwise sleep until a
    // job arrives or we stop, poke() says a send or receive was posted inline, or,
    // locked out by an inline call, until it leaves (leave_inline wakes this thread for
    // that only), to look again; the timeout is a safety net.
    locked_out_.store(locked_out);
    changed_.wait_for(lock, std::chrono::milliseconds(moving_looks_left_ > 0 ? kMovingMs : 50), [this] {
      return stopping_ || poked_ || ((!queue_.empty() || locked_out_.load()) && !busy_.load());
    });
    locked_out_.store(false);
  }
}

}  // namespace tutti::work
