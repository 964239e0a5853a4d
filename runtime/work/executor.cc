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

std::shared_ptr<Work> Executor::submit(Job job) {
  auto work = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(Item{std::move(job), work});
    start_thread_locked();
  }
  changed_.notify_all();
  if (hooks_.interrupt_transport) hooks_.interrupt_transport();
  return work;
}

bool Executor::enter_inline() {
  bool has_thread = false;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (!queue_.empty() || busy_) return false;
    busy_ = true;
    has_thread = thread_.joinable();
  }
  // The thread may be asleep in the transport holding the run lock; wake it so it
  // lets go at once.
  if (has_thread && hooks_.interrupt_transport) hooks_.interrupt_transport();
  return true;
}

void Executor::leave_inline() {
  bool has_thread = false;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    busy_ = false;
    has_thread = thread_.joinable();
  }
  // Only the thread waits on changed_; without one there is nobody to wake.
  if (has_thread) changed_.notify_all();
}

void Executor::thread_main() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  while (true) {
    if (!queue_.empty() && !busy_) {
      Item item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      execute(item);
      lock.lock();
      busy_ = false;
      changed_.notify_all();
      continue;
    }
    if (stopping_) return;
    lock.unlock();
    bool in_flight = false;
    {
      std::unique_lock<std::mutex> run(run_mutex_, std::try_to_lock);
      if (run.owns_lock() && hooks_.progress_in_flight) {
        in_flight = hooks_.progress_in_flight();
        if (in_flight) hooks_.sleep_in_transport(1);
      }
    }
    lock.lock();
    if (in_flight) continue;
    // Nothing in flight: sleep until a job arrives or we stop (every request in flight
    // was posted by a job of this thread, so nothing else needs a wake-up); the timeout
    // is a safety net.
    changed_.wait_for(lock, std::chrono::milliseconds(50),
                      [this] { return stopping_ || (!queue_.empty() && !busy_); });
  }
}

}  // namespace tutti::work
