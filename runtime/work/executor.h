// Runs a communicator's operations one at a time, in the order they were issued.
//
// A blocking call on an idle communicator runs inline on the caller's thread: no
// hand-off, no wake-up, so small-message latency is the algorithm's alone. Anything
// issued with a work pointer goes to a queue that a thread of the communicator's own
// (started on first use) drains, so it completes while the user's thread computes; a
// blocking call issued behind queued work waits its turn.
//
// Between jobs, while the transport has requests in flight that no job waits for
// (the isend/irecv of tutti_send/tutti_recv), the thread keeps the transport moving
// through the hooks it was given, sleeping in the transport when nothing happens.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/work/work.h"

namespace tutti::work {

class Executor {
 public:
  // Runs one operation. Returns true when the operation is complete once it returns
  // (the executor completes its Work with OK), false when it handed the Work to
  // someone who completes it later (a posted isend). Throws Error on failure.
  using Job = std::function<bool(Work&)>;

  struct Hooks {
    // Moves in-flight requests forward and completes their Works; returns whether any
    // are still in flight. Called with the run lock held.
    std::function<bool()> progress_in_flight;
    // Sleeps until the transport may have news or timeout_ms passes. Run lock held.
    std::function<void(int timeout_ms)> sleep_in_transport;
    // Wakes sleep_in_transport from another thread.
    std::function<void()> interrupt_transport;
  };

  explicit Executor(Hooks hooks);
  // Finishes the running and the queued jobs (each is bounded by its own timeout, and
  // fails fast once the communicator is aborted), then joins the thread.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues job and returns its Work at once.
  std::shared_ptr<Work> submit(Job job);
  // A blocking call: runs fn() inline when nothing is queued or running, else queues
  // it and waits its turn (every queued job is bounded by its own timeout). Throws
  // what fn throws. Inline, it costs two short critical sections and no allocation:
  // no Work, no std::function, which is most of a small message's latency.
  template <typename Fn>
  void run(Fn&& fn);

  // Starts the thread though no job needs it, so that its idle turns (at least every
  // 50 ms) call progress_in_flight: for a transport that needs progress while nobody
  // waits on it (transport::Transport::sends_may_linger). Cheap once started.
  void keep_progressing();

 private:
  struct Item {
    Job job;
    std::shared_ptr<Work> work;
  };

  void thread_main();
  void execute(Item& item);
  void start_thread_locked();
  // The inline path of run(): claims the executor if it is idle, and lets it go.
  bool enter_inline();
  void leave_inline();
  // wanted_ = whether a job is queued or running (so the run lock is wanted).
  void update_wanted_locked();
  // Wakes the thread if it is asleep in the transport (holding the run lock).
  void wake_from_transport();

  Hooks hooks_;
  std::mutex run_mutex_;  // held while a job runs or the transport is driven

  std::mutex queue_mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;   // guarded by queue_mutex_
  bool busy_ = false;        // a job is running; guarded by queue_mutex_
  bool stopping_ = false;    // guarded by queue_mutex_
  bool locked_out_ = false;  // the thread waits for an inline call's run lock; guarded by queue_mutex_
  std::thread thread_;
  std::atomic<bool> has_thread_{false};           // thread_ was started; set by the issuing thread
  std::atomic<bool> wanted_{false};               // a job queued or running; written under queue_mutex_
  std::atomic<bool> asleep_in_transport_{false};  // the thread is in sleep_in_transport
};

template <typename Fn>
void Executor::run(Fn&& fn) {
  // Until an asynchronous call starts the thread, only the issuing thread touches the
  // executor and the transport (tutti.h: one thread at a time per communicator), so a
  // blocking call needs no lock at all.
  if (!has_thread_.load(std::memory_order_acquire)) {
    fn();
    return;
  }
  if (!enter_inline()) {
    // fn outlives the job: this thread waits for it to complete.
    auto work = submit([&fn](Work&) {
      fn();
      return true;
    });
    work->wait_for(-1);
    if (work->status() != Status::kOk) fail(work->status(), work->message());
    return;
  }
  struct Leave {
    Executor* executor;
    ~Leave() { executor->leave_inline(); }
  } leave{this};
  std::lock_guard<std::mutex> running(run_mutex_);
  fn();
}

}  // namespace tutti::work
