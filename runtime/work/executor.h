// Runs a communicator's operations one at a time, in the order they were issued.
//
// A blocking call on an idle communicator runs inline on the caller's thread: no
// hand-off, no wake-up, so small-message latency is the algorithm's alone. Anything
// issued with a work pointer goes to a queue that a thread of the communicator's own
// (started on first use) drains, so it completes while the user's thread computes; a
// blocking call issued behind queued work waits its turn.
//
// Between jobs, while the transport has requests in flight that nobody waits for (the
// isend/irecv of tutti_send/tutti_recv, once poke() says so), the thread moves them
// through the hook it was given, and holds the transport only while it does: their
// waiters move them themselves (work.h's Driver), and a thread asleep in the transport
// holding it had to be woken, by a system call, for each of their turns. Once the
// user's thread has left the communicator alone, the thread sleeps in the transport
// without holding it (the arm hooks), so that it moves them as their news arrives:
// when it looked every kMovingMs instead, a 64 MiB isend to a rank that computed for
// 500 ms took 294 ms over TCP (now 53; 15 when the receiver waits at once).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/work/armed.h"
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
    // Optional, all three or none: the transport's arm (run lock held), wait_armed
    // (not held; up to the given milliseconds) and interrupt (any thread).
    std::function<Armed()> arm;
    std::function<void(int)> wait_armed;
    std::function<void()> interrupt;
  };

  explicit Executor(Hooks hooks);
  // Finishes the running and the queued jobs (each is bounded by its own timeout, and
  // fails fast once the communicator is aborted), then joins the thread.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues job and returns its Work (work, or a new one) at once.
  std::shared_ptr<Work> submit(Job job, std::shared_ptr<Work> work = nullptr);
  // A blocking call: runs fn() inline when nothing is queued or running, else queues
  // it and waits its turn (every queued job is bounded by its own timeout). Throws
  // what fn throws. Inline, it costs two short critical sections and no allocation:
  // no Work, no std::function, which is most of a small message's latency.
  template <typename Fn>
  void run(Fn&& fn);
  // run()'s inline path alone: runs fn() and returns true when nothing is queued or
  // running, else returns false at once. Also for posting a send or receive, and for a
  // waiter driving one (work.h's Driver), which may be on any thread: see share().
  template <typename Fn>
  bool run_if_idle(Fn&& fn);
  // Says that threads other than the issuing one may now run operations inline (a
  // waiter driving a send or receive), so that from now on every run takes the locks
  // it can skip while the issuing thread is the only one. Issuing thread.
  void share() { locking_.store(true, std::memory_order_release); }
  // Whether jobs wait in the queue: an inline run that may go on for long (a waiter
  // driving a receive) ends its turn for them. Any thread.
  bool has_queued() const { return queued_.load(std::memory_order_relaxed); }
  // Has the thread (started if need be) move the requests in flight while nobody waits
  // on them: after a send or receive posted inline that did not complete at once, which
  // another communicator's wait may depend on. Not from inside run() or run_if_idle().
  void poke();

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
  // Interrupts the thread's sleep in the transport, if it sleeps there. After a change
  // made under queue_mutex_.
  void wake_from_transport();
  void execute(Item& item);
  void start_thread_locked();
  // The inline path of run(): claims the executor if it is idle, and lets it go.
  bool enter_inline();
  void leave_inline();
  // queued_ = !queue_.empty().
  void update_queued_locked();

  // How often the thread moves requests in flight that nobody waits for, and for how
  // many looks after the last one it goes on looking.
  static constexpr int kMovingMs = 1;
  static constexpr int kMovingLooks = 100;

  Hooks hooks_;
  std::mutex run_mutex_;  // held while a job runs or the transport is driven

  std::mutex queue_mutex_;
  std::condition_variable changed_;
  std::deque<Item> queue_;     // guarded by queue_mutex_
  bool stopping_ = false;      // guarded by queue_mutex_
  int moving_looks_left_ = 0;  // > 0: the thread looks every kMovingMs; guarded by queue_mutex_
  bool poked_ = false;         // poke() since the thread last looked; guarded by queue_mutex_
  std::thread thread_;
  std::atomic<bool> has_thread_{false};  // thread_ was started; set by the issuing thread
  std::atomic<bool> locking_{false};     // runs take the locks: has_thread_, or share()
  std::atomic<bool> queued_{false};      // !queue_.empty(); written under queue_mutex_
  // enter_inline and leave_inline take no lock: see there.
  std::atomic<bool> busy_{false};          // a job or an inline run holds the executor
  std::atomic<bool> locked_out_{false};    // the thread waits for an inline call's run lock; written under queue_mutex_
  std::atomic<uint64_t> inline_runs_{0};   // inline runs ended (a count, not a clock: each run read one)
  std::atomic<bool> in_transport_{false};  // the thread sleeps in wait_armed; written under queue_mutex_
};

template <typename Fn>
void Executor::run(Fn&& fn) {
  if (run_if_idle(fn)) return;
  // fn outlives the job: this thread waits for it to complete.
  auto work = submit([&fn](Work&) {
    fn();
    return true;
  });
  work->wait_for(-1);
  if (work->status() != Status::kOk) fail(work->status(), work->message());
}

template <typename Fn>
bool Executor::run_if_idle(Fn&& fn) {
  // Until an asynchronous call starts the thread (or share()), only the issuing thread
  // touches the executor and the transport (tutti.h: one thread at a time per
  // communicator), so a blocking call needs no lock at all.
  if (!locking_.load(std::memory_order_acquire)) {
    fn();
    return true;
  }
  if (!enter_inline()) return false;
  struct Leave {
    Executor* executor;
    ~Leave() { executor->leave_inline(); }
  } leave{this};
  std::lock_guard<std::mutex> running(run_mutex_);
  fn();
  return true;
}

}  // namespace tutti::work
