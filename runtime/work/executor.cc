#include "runtime/work/executor.h"

#include <chrono>

#include "runtime/common/error.h"

namespace tutti::work {

Executor::Executor(Hooks hooks) : hooks_(std::move(hooks)) {}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (hooks_.interrupt_transport) hooks_.interrupt_transport();
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
  thread_ = std::thread([this] { thread_main(); });
}

void Executor::keep_progressing() {
  if (has_thread_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(queue_mutex_);
  start_thread_locked();
}

void Executor::update_wanted_locked() { wanted_.store(!queue_.empty() || busy_, std::memory_order_seq_cst); }

void Executor::wake_from_transport() {
  // The thread says it is asleep in the transport before it reads wanted_, and the
  // callers set wanted_ before they read this: one of the two sees the other.
  if (asleep_in_transport_.load(std::memory_order_seq_cst) && hooks_.interrupt_transport) hooks_.interrupt_transport();
}

std::shared_ptr<Work> Executor::submit(Job job) {
  auto work = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(Item{std::move(job), work});
    update_wanted_locked();
    start_thread_locked();
  }
  changed_.notify_all();
  wake_from_transport();
  return work;
}

bool Executor::enter_inline() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (!queue_.empty() || busy_) return false;
    busy_ = true;
    update_wanted_locked();
  }
  // The thread may be asleep in the transport holding the run lock; wake it so it
  // lets go at once. Only then: the wake-up is a system call, and the woken thread
  // takes a core, which made every blocking call 4-12 us slower once an asynchronous
  // one had started the thread.
  wake_from_transport();
  return true;
}

void Executor::leave_inline() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    busy_ = false;
    update_wanted_locked();
    wake = !queue_.empty() || locked_out_;
  }
  // Only the thread waits on changed_: for a job it may run, or for this call to let
  // go of the run lock it found held. Otherwise there is nothing to wake it for.
  if (wake) changed_.notify_all();
}

void Executor::thread_main() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  while (true) {
    if (!queue_.empty() && !busy_) {
      Item item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      update_wanted_locked();
      lock.unlock();
      execute(item);
      lock.lock();
      busy_ = false;
      update_wanted_locked();
      changed_.notify_all();
      continue;
    }
    if (stopping_) return;
    lock.unlock();
    bool in_flight = false;
    bool locked_out = false;  // an inline call held the run lock: in flight unknown
    {
      std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
      locked_out = !run.owns_lock();
      if (run.owns_lock() && hooks_.progress_in_flight) {
        in_flight = hooks_.progress_in_flight();
        if (in_flight) {
          asleep_in_transport_.store(true, std::memory_order_seq_cst);
          if (!wanted_.load(std::memory_order_seq_cst)) hooks_.sleep_in_transport(1);
          asleep_in_transport_.store(false, std::memory_order_relaxed);
        }
      }
    }
    lock.lock();
    if (in_flight) continue;
    // Nothing in flight: sleep until a job arrives or we stop (every request in flight
    // was posted by a job of this thread, so nothing else needs a wake-up), or, locked
    // out by an inline call, until it leaves (leave_inline wakes this thread for that
    // only), to look again; the timeout is a safety net.
    locked_out_ = locked_out;
    changed_.wait_for(lock, std::chrono::milliseconds(50),
                      [this] { return stopping_ || (!queue_.empty() && !busy_) || (locked_out_ && !busy_); });
    locked_out_ = false;
  }
}

}  // namespace tutti::work
