#include "runtime/loop/loop.h"

#include <pthread.h>
#include <signal.h>

#include "runtime/common/error.h"
#include "runtime/common/log.h"

namespace tutti::loop {

std::shared_ptr<Loop> Loop::shared() {
  // Weak, so that the thread goes away with the last communicator instead of at exit,
  // where the order of static destructors would make joining it a gamble.
  static std::mutex mutex;
  static std::weak_ptr<Loop> current;
  std::lock_guard<std::mutex> lock(mutex);
  auto loop = current.lock();
  if (!loop) {
    loop = create();
    current = loop;
  }
  return loop;
}

std::shared_ptr<Loop> Loop::create() { return std::shared_ptr<Loop>(new Loop(), &Loop::release); }

// The last holder can let go on the loop thread itself: a task or callback held the
// last reference to an object that holds the loop (a failure detector's state freed
// when its timer closes, after its communicator is gone). That thread cannot join
// itself (join() throws, and from a destructor that is std::terminate), so the loop
// is destroyed on a thread of its own, which joins the loop thread once the task that
// let go has returned.
void Loop::release(Loop* loop) {
  if (!loop->on_loop_thread()) {
    delete loop;
    return;
  }
  try {
    std::thread([loop] { delete loop; }).detach();
  } catch (const std::system_error& e) {
    log::error("cannot start a thread to stop the event loop (", e.what(), "); it runs until the process exits");
  }
}

Loop::Loop() {
  int rc = uv_loop_init(&loop_);
  if (rc != 0) fail(Status::kInternal, concat("uv_loop_init failed: ", uv_strerror(rc)));
  rc = uv_async_init(&loop_, &wakeup_, &Loop::on_wakeup);
  if (rc != 0) fail(Status::kInternal, concat("uv_async_init failed: ", uv_strerror(rc)));
  wakeup_.data = this;
  std::promise<void> started;
  auto started_future = started.get_future();
  thread_ = std::thread([this, &started] {
    thread_id_ = std::this_thread::get_id();
    started.set_value();
    run_thread();
  });
  started_future.wait();
}

Loop::~Loop() {
  assert(!on_loop_thread());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  uv_async_send(&wakeup_);
  thread_.join();
  uv_loop_close(&loop_);
}

bool Loop::post(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  uv_async_send(&wakeup_);
  return true;
}

uv_buf_t Loop::read_buffer() {
  TUTTI_ASSERT_ON_LOOP(*this);
  constexpr size_t kBytes = 64 * 1024;
  if (!read_buffer_) read_buffer_ = std::make_unique<char[]>(kBytes);
  return uv_buf_init(read_buffer_.get(), kBytes);
}

void Loop::on_wakeup(uv_async_t* async) {
  auto* self = static_cast<Loop*>(async->data);
  // Read stopping_ before draining: once it is set no task can be queued, so the drain
  // below is the last, and no task runs after the handles are closed (a task that
  // wrote to a closed socket, or opened a handle after the walk, would crash the loop
  // or keep uv_run from returning). Read after draining, a task posted in between would
  // be left for the drain after uv_run, with every handle already closed under it.
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    stopping = self->stopping_;
  }
  self->drain_tasks_on_loop();
  if (stopping) {
    // Close whatever handle is still open (owners close theirs first; this is the net
    // under them) so that uv_run returns.
    uv_walk(
        &self->loop_,
        [](uv_handle_t* handle, void*) {
          if (!uv_is_closing(handle)) uv_close(handle, nullptr);
        },
        nullptr);
  }
}

void Loop::drain_tasks_on_loop() {
  std::vector<Task> batch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch.swap(tasks_);
  }
  for (auto& task : batch) {
    try {
      task();
    } catch (const std::exception& e) {
      // A task must not take the loop down with it: the loop serves every communicator.
      log::error("event loop task threw: ", e.what());
    } catch (...) {
      log::error("event loop task threw something that is not a std::exception");
    }
  }
}

void Loop::run_thread() {
  // libuv writes to sockets with write(), which raises SIGPIPE when the peer has closed:
  // by default that kills the whole process, a program's rank or the store's host,
  // for a peer that merely went away. Blocked on this thread, the signal stays
  // pending here, harmless, and the write fails with EPIPE, which the read side of the
  // connection reports. The program's own SIGPIPE handling is left as it is.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  uv_run(&loop_, UV_RUN_DEFAULT);
  // Tasks posted between the last wake-up and stopping_ are still run, so that no
  // promise a caller waits on is left unset.
  drain_tasks_on_loop();
}

void Loop::fail_call_timeout() {
  fail(Status::kTimeout,
       "the tutti event loop did not run a task before its deadline; the loop thread is busy or stuck");
}

void Loop::fail_stopped() { fail(Status::kAborted, "the tutti event loop is stopping; no new work is accepted"); }

}  // namespace tutti::loop
