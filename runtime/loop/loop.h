// The runtime's event loop: one libuv loop on a thread of its own per process. All
// rendezvous I/O, timers and heartbeats run on it. Other threads never touch a uv
// handle; they hand the loop a task with post() (a mutex-guarded queue and a uv_async
// wake-up) and, when they need the answer, wait on it with a bound.
#pragma once

#include <uv.h>

#include <cassert>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "runtime/common/deadline.h"

namespace tutti::loop {

class Loop {
 public:
  using Task = std::function<void()>;

  // The process's loop, started on first use and stopped when its last holder lets go.
  static std::shared_ptr<Loop> shared();
  // A loop on a thread of its own (the launcher and tests own private loops). Its last
  // holder may let go on any thread, the loop's own included (see release()).
  static std::shared_ptr<Loop> create();

  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Runs task on the loop thread, after the tasks posted before it. Any thread.
  // Returns false, and drops the task, once the loop is stopping.
  bool post(Task task);

  // Runs fn on the loop thread and returns its result (or rethrows what it threw),
  // waiting at most until deadline: Error(kTimeout) past it. On the loop thread it
  // runs fn inline.
  template <typename Fn>
  auto call(Fn&& fn, Deadline deadline) -> std::invoke_result_t<Fn&>;

  // The uv loop, for code running on the loop thread only.
  uv_loop_t* uv() {
    assert(on_loop_thread());
    return &loop_;
  }
  bool on_loop_thread() const { return std::this_thread::get_id() == thread_id_; }

  // One read buffer for every stream of this loop (a uv alloc_cb's answer): libuv reads
  // into it right after asking, and readers copy what they keep, so idle connections
  // cost no buffer. The loop's own, not a thread_local array: a library's static TLS is
  // zeroed in every thread the program starts, its own or not, and 64 KiB of it cost
  // each of them 64 KiB of memory. Loop thread only.
  uv_buf_t read_buffer();

 private:
  Loop();
  // Closes every handle still open, finishes the tasks already posted and joins the
  // loop thread: never on that thread, which cannot join itself.
  ~Loop();
  // The deleter of create()'s pointer.
  static void release(Loop* loop);
  static void on_wakeup(uv_async_t* async);
  void run_thread();
  void drain_tasks_on_loop();
  [[noreturn]] static void fail_call_timeout();
  [[noreturn]] static void fail_stopped();

  uv_loop_t loop_;
  uv_async_t wakeup_;
  std::mutex mutex_;
  std::vector<Task> tasks_;  // guarded by mutex_
  bool stopping_ = false;    // guarded by mutex_
  std::thread thread_;
  std::thread::id thread_id_;
  std::unique_ptr<char[]> read_buffer_;  // made at the first read
};

#define TUTTI_ASSERT_ON_LOOP(loop) assert((loop).on_loop_thread())

template <typename Fn>
auto Loop::call(Fn&& fn, Deadline deadline) -> std::invoke_result_t<Fn&> {
  using Result = std::invoke_result_t<Fn&>;
  if (on_loop_thread()) return fn();
  auto promise = std::make_shared<std::promise<Result>>();
  auto future = promise->get_future();
  bool posted = post([promise, fn = std::forward<Fn>(fn)]() mutable {
    try {
      if constexpr (std::is_void_v<Result>) {
        fn();
        promise->set_value();
      } else {
        promise->set_value(fn());
      }
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  if (!posted) fail_stopped();
  if (future.wait_until(deadline.at()) != std::future_status::ready) fail_call_timeout();
  return future.get();
}

}  // namespace tutti::loop
