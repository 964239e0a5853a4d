// The event loop (runtime/loop/loop.cc): tasks run in order on one thread, call()
// returns values and exceptions with a bound, and destruction runs what was posted.
#include <criterion/criterion.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/loop/loop.h"

using tutti::Deadline;
using tutti::Status;
using tutti::loop::Loop;

Test(loop, posted_tasks_run_in_order_on_the_loop_thread, .timeout = 10) {
  auto loop = Loop::create();
  std::vector<int> order;  // touched only on the loop thread
  std::atomic<bool> off_thread{false};
  for (int i = 0; i < 1000; ++i) {
    cr_assert(loop->post([&, i] {
      if (!loop->on_loop_thread()) off_thread = true;
      order.push_back(i);
    }));
  }
  size_t size = loop->call([&] { return order.size(); }, Deadline::after_ms(5000));
  cr_assert_eq(size, 1000u);
  for (int i = 0; i < 1000; ++i) cr_assert_eq(order[i], i);
  cr_assert(!off_thread);
  cr_assert(!loop->on_loop_thread());
}

Test(loop, posts_from_many_threads_all_run, .timeout = 20) {
  auto loop = Loop::create();
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) loop->post([&] { ++ran; });
    });
  }
  for (auto& t : threads) t.join();
  loop->call([] {}, Deadline::after_ms(5000));
  cr_assert_eq(ran.load(), 16000);
}

Test(loop, call_returns_values_and_rethrows, .timeout = 10) {
  auto loop = Loop::create();
  cr_assert_eq(loop->call([] { return 42; }, Deadline::after_ms(5000)), 42);
  std::string text = loop->call([] { return std::string("hello"); }, Deadline::after_ms(5000));
  cr_assert_eq(text, "hello");
  bool on_loop = loop->call([&] { return loop->on_loop_thread(); }, Deadline::after_ms(5000));
  cr_assert(on_loop);
  try {
    loop->call([]() -> int { tutti::fail(Status::kMismatch, "boom"); }, Deadline::after_ms(5000));
    cr_assert_fail("call did not rethrow");
  } catch (const tutti::Error& e) {
    cr_assert(e.status() == Status::kMismatch);
    cr_assert_str_eq(e.what(), "boom");
  }
  cr_assert_throw(loop->call([] { throw std::logic_error("x"); }, Deadline::after_ms(5000)), std::logic_error);
  // The loop survives a task that threw, and a call made on the loop runs inline.
  int nested =
      loop->call([&] { return loop->call([] { return 7; }, Deadline::after_ms(0)); }, Deadline::after_ms(5000));
  cr_assert_eq(nested, 7);
}

Test(loop, a_throwing_posted_task_does_not_stop_the_loop, .timeout = 10) {
  auto loop = Loop::create();
  loop->post([] { throw std::runtime_error("task failed"); });
  loop->post([] { throw 5; });
  cr_assert_eq(loop->call([] { return 1; }, Deadline::after_ms(5000)), 1);
}

Test(loop, call_times_out_when_the_loop_is_busy, .timeout = 10) {
  auto loop = Loop::create();
  std::atomic<bool> release{false};
  loop->post([&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  auto start = std::chrono::steady_clock::now();
  try {
    loop->call([] { return 1; }, Deadline::after_ms(100));
    cr_assert_fail("call did not time out");
  } catch (const tutti::Error& e) {
    cr_assert(e.status() == Status::kTimeout);
  }
  auto waited = std::chrono::steady_clock::now() - start;
  cr_assert(waited >= std::chrono::milliseconds(100) && waited < std::chrono::seconds(3));
  release = true;
  cr_assert_eq(loop->call([] { return 2; }, Deadline::after_ms(5000)), 2);
}

Test(loop, destruction_runs_pending_tasks_and_closes_handles, .timeout = 10) {
  std::atomic<int> ran{0};
  {
    auto loop = Loop::create();
    // Holds the loop while the rest queue up behind it.
    loop->post([] { std::this_thread::sleep_for(std::chrono::milliseconds(50)); });
    for (int i = 0; i < 500; ++i) loop->post([&] { ++ran; });
    // A timer left open by its owner: the destructor's net closes it.
    loop->call(
        [&] {
          static uv_timer_t timer;
          uv_timer_init(loop->uv(), &timer);
          uv_timer_start(
              &timer, [](uv_timer_t*) {}, 100000, 0);
        },
        Deadline::after_ms(5000));
  }
  cr_assert_eq(ran.load(), 500);
}

Test(loop, shared_returns_the_same_loop_while_held, .timeout = 10) {
  auto a = Loop::shared();
  auto b = Loop::shared();
  cr_assert_eq(a.get(), b.get());
}

// A task that holds the last reference lets go on the loop thread itself: the loop
// is stopped and joined from another thread instead of std::terminate (a thread that
// joins itself), and the tasks posted before the release still run.
Test(loop, the_last_holder_may_let_go_on_the_loop_thread, .timeout = 10) {
  auto loop = Loop::create();
  std::weak_ptr<Loop> watched = loop;
  std::promise<void> dropped;
  auto dropped_future = dropped.get_future();
  std::atomic<bool> released_on_loop{false};
  cr_assert(loop->post([held = loop, &dropped_future, &released_on_loop]() mutable {
    dropped_future.wait();  // the test's reference is gone: this one is the last
    released_on_loop = held->on_loop_thread();
    held.reset();
  }));
  loop.reset();
  dropped.set_value();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!watched.expired() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cr_assert(watched.expired(), "the task's reference was not released");
  cr_assert(released_on_loop.load());
  // A new loop starts while the old one stops on its own thread.
  auto next = Loop::shared();
  cr_assert_eq(next->call([] { return 7; }, Deadline::after_ms(5000)), 7);
}

// Every stream of a loop reads into the loop's one buffer (libuv reads right after it
// asks), made at the first read; each loop has its own.
Test(loop, each_loop_has_one_read_buffer, .timeout = 10) {
  auto a = Loop::create();
  auto b = Loop::create();
  auto read_twice = [](const std::shared_ptr<Loop>& loop) {
    return loop->call(
        [&] {
          uv_buf_t first = loop->read_buffer();
          first.base[first.len - 1] = 'x';  // all of it is the loop's to write
          return std::vector<uv_buf_t>{first, loop->read_buffer()};
        },
        Deadline::after_ms(5000));
  };
  std::vector<uv_buf_t> of_a = read_twice(a), of_b = read_twice(b);
  cr_assert_eq(of_a[0].base, of_a[1].base);
  cr_assert_eq(of_a[0].len, 64u * 1024);
  cr_assert_eq(of_a[1].len, 64u * 1024);
  cr_assert_neq(of_a[0].base, of_b[0].base);
}
