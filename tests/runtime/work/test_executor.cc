// The executor: inline runs on an idle communicator, queued runs in issue order on its
// own thread, failures carried by the Work, run_if_idle's refusal while busy, and the
// in-flight hook driven between jobs, once poked, and, once asked to keep progressing,
// while idle; with requests in flight and the user's thread away, the thread sleeping
// in the transport, interrupted for a job or its end.
#include <criterion/criterion.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/work/executor.h"

using tutti::Status;
using tutti::work::Armed;
using tutti::work::Executor;
using tutti::work::Work;

namespace {

Executor::Hooks no_transport() {
  Executor::Hooks hooks;
  hooks.progress_in_flight = [] { return false; };
  return hooks;
}

// A transport the thread can sleep in: arm answers what `answers` says (then kArmed),
// and wait_armed blocks until interrupt(), however long it is asked to wait (up to 5
// s), so that a test sees whether the executor interrupts it.
struct SleepyTransport {
  std::mutex mutex;
  std::condition_variable woken;
  bool interrupted = false;
  std::vector<Armed> answers;  // arm's first answers, in order
  std::atomic<int> looks{0}, arms{0}, sleeps{0}, interrupts{0};
  std::atomic<int> looks_before_first_sleep{-1};

  Executor::Hooks hooks() {
    Executor::Hooks hooks;
    hooks.progress_in_flight = [this] {
      ++looks;
      return true;  // always something in flight
    };
    hooks.arm = [this] {
      const int arm = arms++;
      return arm < static_cast<int>(answers.size()) ? answers[arm] : Armed::kArmed;
    };
    hooks.wait_armed = [this](int) {
      if (sleeps++ == 0) looks_before_first_sleep = looks.load();
      std::unique_lock<std::mutex> lock(mutex);
      woken.wait_for(lock, std::chrono::seconds(5), [this] { return interrupted; });
      interrupted = false;
    };
    hooks.interrupt = [this] {
      ++interrupts;
      std::lock_guard<std::mutex> lock(mutex);
      interrupted = true;
      woken.notify_all();
    };
    return hooks;
  }
};

bool eventually(const std::function<bool()>& condition) {
  const auto start = std::chrono::steady_clock::now();
  while (!condition()) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

Test(executor, blocking_run_on_an_idle_executor_runs_inline, .timeout = 10) {
  Executor executor(no_transport());
  std::thread::id ran_on;
  executor.run([&] { ran_on = std::this_thread::get_id(); });
  cr_assert(ran_on == std::this_thread::get_id());
  // A failure comes back as the exception it was, inline or queued.
  try {
    executor.run([] { tutti::fail(Status::kMismatch, "counts differ"); });
    cr_assert_fail("run() swallowed the failure");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == Status::kMismatch);
    cr_assert_str_eq(error.what(), "counts differ");
  }
  std::atomic<bool> release{false};
  auto busy = executor.submit([&](Work&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return true;
  });
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release = true;
  });
  try {
    executor.run([] { tutti::fail(Status::kTimeout, "queued and failed"); });
    cr_assert_fail("run() swallowed the queued failure");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == Status::kTimeout);
    cr_assert_str_eq(error.what(), "queued and failed");
  }
  releaser.join();
  cr_assert(busy->wait_for(5000));
}

Test(executor, submitted_jobs_run_in_order_off_the_callers_thread, .timeout = 10) {
  Executor executor(no_transport());
  std::vector<int> order;
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < 20; ++i) {
    works.push_back(executor.submit([&order, i](Work&) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      order.push_back(i);
      return true;
    }));
  }
  // A blocking run behind queued work waits its turn.
  executor.run([&order] { order.push_back(100); });
  for (auto& work : works) cr_assert(work->wait_for(5000));
  cr_assert_eq(order.size(), 21u);
  for (int i = 0; i < 20; ++i) cr_assert_eq(order[i], i);
  cr_assert_eq(order[20], 100);
}

Test(executor, a_failure_is_carried_by_the_work, .timeout = 10) {
  Executor executor(no_transport());
  auto work = executor.submit([](Work&) -> bool { tutti::fail(Status::kMismatch, "counts differ"); });
  cr_assert(work->wait_for(5000));
  cr_assert(work->status() == Status::kMismatch);
  cr_assert_str_eq(work->message().c_str(), "counts differ");
  auto next = executor.submit([](Work&) { return true; });
  cr_assert(next->wait_for(5000) && next->status() == Status::kOk);
}

Test(executor, a_wait_that_times_out_leaves_the_work_running, .timeout = 10) {
  Executor executor(no_transport());
  std::atomic<bool> release{false};
  auto work = executor.submit([&](Work&) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return true;
  });
  cr_assert(!work->wait_for(20));
  cr_assert(!work->done());
  release = true;
  cr_assert(work->wait_for(5000) && work->status() == Status::kOk);
}

Test(executor, in_flight_requests_complete_between_jobs, .timeout = 10) {
  std::atomic<int> polls{0};
  std::shared_ptr<Work> handed_off;
  Executor::Hooks hooks = no_transport();
  hooks.progress_in_flight = [&] {
    if (!handed_off) return false;
    if (++polls < 5) return true;
    handed_off->complete(Status::kOk);
    handed_off.reset();
    return false;
  };
  Executor executor(hooks);
  auto work = executor.submit([&](Work& w) {
    handed_off = w.shared_from_this();
    return false;  // someone else completes it: the in-flight hook
  });
  cr_assert(work->wait_for(5000));
  cr_assert(work->status() == Status::kOk);
  cr_assert_geq(polls.load(), 5);
}

Test(executor, destroying_it_finishes_the_queued_jobs, .timeout = 10) {
  std::shared_ptr<Work> queued;
  {
    Executor executor(no_transport());
    executor.submit([](Work&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return true;
    });
    queued = executor.submit([](Work&) { return true; });
    queued = executor.submit([](Work&) { return true; });
  }
  cr_assert(queued->done() && queued->status() == Status::kOk);
}

// run_if_idle: inline on an idle executor, also once the thread runs; refused at once
// while a job runs, and while one waits in the queue (has_queued says so), so that a
// waiter driving its receive lets queued work go first.
Test(executor, run_if_idle_runs_inline_or_refuses_while_busy, .timeout = 10) {
  Executor executor(no_transport());
  std::thread::id ran_on;
  cr_assert(executor.run_if_idle([&] { ran_on = std::this_thread::get_id(); }));
  cr_assert(ran_on == std::this_thread::get_id());
  std::atomic<bool> release{false};
  auto running = executor.submit([&](Work&) {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return true;
  });
  auto queued = executor.submit([](Work&) { return true; });
  cr_assert(executor.has_queued() || queued->done(), "a job waits behind the running one");
  bool ran = false;
  cr_assert(!executor.run_if_idle([&] { ran = true; }));
  cr_assert(!ran, "run_if_idle ran beside a running job");
  release.store(true);
  cr_assert(running->wait_for(5000) && queued->wait_for(5000));
  cr_assert(!executor.has_queued());
  // Idle again once the thread has let go of the last job (a moment after its Work).
  auto start = std::chrono::steady_clock::now();
  while (!executor.run_if_idle([&] { ran = true; }) &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cr_assert(ran, "run_if_idle still refused 5 s after the jobs ended");
}

// poke: the thread, started for it, calls the in-flight hook every kMovingMs while it
// says requests are in flight, with no job and no waiter; then idles.
Test(executor, poke_has_the_thread_move_requests_in_flight, .timeout = 10) {
  std::atomic<int> polls{0};
  Executor::Hooks hooks;
  hooks.progress_in_flight = [&] { return ++polls < 5; };
  Executor executor(hooks);
  executor.share();
  executor.poke();
  auto start = std::chrono::steady_clock::now();
  while (polls.load() < 5 && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cr_assert_geq(polls.load(), 5, "the poked thread called the hook %d times in 5 s", polls.load());
  int ran = 0;
  executor.run([&] { ++ran; });
  cr_assert_eq(ran, 1);
}

// A poke that wakes the thread just after an inline run ended (a program that posts
// a receive, then computes) has it look within a few kMovingMs, not at its idle
// timeout: the turn it wakes for does not look (the user's thread used the
// communicator since the last one) but keeps the news for the next. Once, that turn
// dropped it, and each poke cost a wake-up that came to nothing (a 4 KiB exchange over
// TCP took 2-3x its time). Timed, but 1 ms against 50: the median of five trials.
Test(executor, a_poke_after_an_inline_run_is_kept_for_the_next_look, .timeout = 30) {
  using Clock = std::chrono::steady_clock;
  std::vector<int64_t> waits_ms;
  for (int trial = 0; trial < 5; ++trial) {
    std::atomic<int64_t> first_look_ns{0};
    std::atomic<bool> poked{false};
    Executor::Hooks hooks;
    hooks.progress_in_flight = [&] {
      if (poked.load() && first_look_ns.load() == 0) first_look_ns = Clock::now().time_since_epoch().count();
      return false;
    };
    Executor executor(hooks);
    executor.keep_progressing();  // the thread's first turn looks, then it idles
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cr_assert(executor.run_if_idle([] {}));
    const auto poked_at = Clock::now();
    poked = true;
    executor.poke();
    while (first_look_ns.load() == 0 && Clock::now() - poked_at < std::chrono::seconds(5)) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    cr_assert_neq(first_look_ns.load(), 0, "the poked thread did not look within 5 s");
    waits_ms.push_back((first_look_ns.load() - poked_at.time_since_epoch().count()) / 1'000'000);
  }
  std::sort(waits_ms.begin(), waits_ms.end());
  cr_assert_lt(waits_ms[2], 25,
               "the poked thread's first look came %lld ms after the poke (median of 5; idle timeout 50)",
               static_cast<long long>(waits_ms[2]));
}

// keep_progressing starts the thread with no job: its idle turns keep calling the
// in-flight hook (so that a transport whose sends may linger is progressed while its
// rank waits elsewhere), and blocking runs then go through the run lock beside it.
Test(executor, keep_progressing_drives_the_transport_while_idle, .timeout = 10) {
  std::atomic<int> polls{0};
  Executor::Hooks hooks = no_transport();
  hooks.progress_in_flight = [&] {
    ++polls;
    return false;
  };
  Executor executor(hooks);
  executor.keep_progressing();
  executor.keep_progressing();  // once started, nothing more
  auto start = std::chrono::steady_clock::now();
  while (polls.load() < 3 && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  cr_assert_geq(polls.load(), 3, "the idle thread called the hook %d times in 5 s", polls.load());
  int ran = 0;
  executor.run([&] { ++ran; });
  cr_assert_eq(ran, 1);
}

// Poked with requests in flight and left alone, the thread sleeps in the transport
// (not holding it: a blocking call runs inline meanwhile), and a job submitted then
// interrupts that sleep and runs, though the sleep would last seconds; arm's kBusy
// (news already) has it look again at once instead of sleeping.
Test(executor, the_thread_sleeps_in_the_transport_until_a_job_comes, .timeout = 30) {
  SleepyTransport transport;
  transport.answers = {Armed::kBusy, Armed::kBusy};
  Executor executor(transport.hooks());
  executor.share();
  executor.poke();
  cr_assert(eventually([&] { return transport.sleeps.load() > 0; }), "the thread never slept in the transport");
  cr_expect_geq(transport.looks_before_first_sleep.load(), 3, "two kBusy answers, then a sleep: 3 looks first, not %d",
                transport.looks_before_first_sleep.load());
  int ran_inline = 0;
  cr_assert(executor.run_if_idle([&] { ++ran_inline; }), "an inline run was refused while the thread slept");
  cr_expect_eq(ran_inline, 1);
  std::atomic<bool> ran{false};
  auto work = executor.submit([&](Work&) {
    ran = true;
    return true;
  });
  cr_assert(work->wait_for(3000), "the job did not run within 3 s of its submission (sleep not interrupted?)");
  cr_expect(ran.load());
  cr_expect_geq(transport.interrupts.load(), 1, "the submission did not interrupt the sleep");
}

// The destructor interrupts the thread's sleep in the transport rather than waiting
// it out.
Test(executor, destroying_it_interrupts_the_threads_sleep_in_the_transport, .timeout = 30) {
  SleepyTransport transport;
  auto start = std::chrono::steady_clock::now();
  {
    Executor executor(transport.hooks());
    executor.share();
    executor.poke();
    cr_assert(eventually([&] { return transport.sleeps.load() > 0; }), "the thread never slept in the transport");
    start = std::chrono::steady_clock::now();
  }
  const auto took_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  cr_expect_lt(took_ms, 3000, "the destructor took %lld ms: it waited out the sleep", static_cast<long long>(took_ms));
  cr_expect_geq(transport.interrupts.load(), 1);
}
