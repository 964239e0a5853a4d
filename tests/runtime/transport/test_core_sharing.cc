// core_sharing: the core counts as shared while at least half of the last 8 yields ran
// someone else, so one yield either way does not flip it; a yield on a CPU where a
// busy thread runs does find it shared, before long; and a waiter that keeps yielding
// to a partner on its CPU while another CPU idles moves there.
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "runtime/common/cpus.h"
#include "runtime/transport/core_sharing.h"

using tutti::transport::core_shared;
using tutti::transport::note_yield;
using tutti::transport::yield_core;

namespace {

void note(bool ran_others, int times) {
  for (int i = 0; i < times; ++i) note_yield(ran_others);
}

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0, "cannot pin to CPU %d", cpu);
}

int first_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) return cpu;
  }
  cr_assert_fail("no CPU to run on");
  return 0;
}

}  // namespace

Test(core_sharing, half_of_the_last_eight_yields_decide, .timeout = 10) {
  note(false, 8);
  cr_assert(!core_shared(), "no yield ran others");
  note(true, 1);
  cr_assert(!core_shared(), "one yield of eight ran others");
  note(true, 3);
  cr_assert(core_shared(), "four yields of the last eight ran others");
  note(false, 1);
  cr_assert(core_shared(), "one yield alone after four that ran others");
  note(false, 3);
  cr_assert(core_shared(), "four of the last eight still ran others");
  note(false, 1);
  cr_assert(!core_shared(), "only three of the last eight ran others");
  note(true, 8);
  note(false, 8);
  cr_assert(!core_shared(), "eight yields alone after eight that ran others");
}

// A yield with nothing else to run on its CPU is a bare system call, whatever one costs
// here: on a VM whose system calls go through the hypervisor (1.0-1.4 us), a fixed 1 us
// bound counted every yield as having run someone else. The test runs on the last CPU
// of its affinity (the others here pin to the first) and gives a busy moment a few
// rounds: the core must be found unshared in one of them.
Test(core_sharing, yields_alone_on_a_cpu_find_the_core_unshared, .timeout = 30) {
  const std::vector<int> cpus = tutti::allowed_cpus();
  pin_to_cpu(cpus.back());
  const auto bound = tutti::transport::yield_ran_others_after();
  cr_assert_geq(bound.count(), 1000, "the bound is %lld ns, under the 1 us floor",
                static_cast<long long>(bound.count()));
  bool unshared = false;
  for (int round = 0; round < 50 && !unshared; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (int i = 0; i < 16; ++i) yield_core();
    unshared = !core_shared();
  }
  cr_assert(unshared, "in 50 rounds of 16 yields on CPU %d, at least half of the last 8 took over %lld ns (the bound)",
            cpus.back(), static_cast<long long>(bound.count()));
}

// The scheduler runs a busy thread on the yielder's CPU at some yields (a third of
// them under EEVDF, Linux 6.6 on), which a yield must see as taking longer than a
// system call.
Test(core_sharing, yields_beside_a_busy_thread_find_the_core_shared, .timeout = 30) {
  const int cpu = first_cpu();
  pin_to_cpu(cpu);
  note(false, 8);
  std::atomic<bool> started{false}, stop{false};
  std::thread busy([&] {
    pin_to_cpu(cpu);
    started.store(true);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (!started.load()) std::this_thread::yield();
  bool found = false;
  for (int i = 0; i < 2000 && !found; ++i) {
    yield_core();
    found = core_shared();
  }
  stop.store(true);
  busy.join();
  cr_assert(found, "2,000 yields beside a busy thread on CPU %d never found the core shared", cpu);
}

// Two ranks that wait for each other by yielding, on one CPU while another idles: the
// kernel leaves them there for 10-15 ms (core_sharing.cc), the waiter moves within a
// run of at most 32 yields that ran its partner. The partner is pinned, so only the
// waiter can go. A round counts where the machine had no more runnable threads than
// CPUs before and after it (a move waits for that); ctest runs this file alone
// (RUN_SERIAL), but the file's own tests run side by side.
Test(core_sharing, a_waiter_sharing_its_cpu_with_its_partner_moves_to_a_free_one, .timeout = 60) {
  const std::vector<int> cpus = tutti::allowed_cpus();
  if (cpus.size() < 2) {
    std::fprintf(stderr, "SKIP: moving needs 2 CPUs, and this process may run on %zu\n", cpus.size());
    cr_skip_test("moving needs 2 CPUs");
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
  const int cpu = cpus[0];
  std::atomic<bool> started{false}, stop{false};
  // The partner works a few microseconds (a rank's call), then yields (its wait).
  std::thread partner([&] {
    pin_to_cpu(cpu);
    started.store(true);
    while (!stop.load(std::memory_order_relaxed)) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(10);
      while (std::chrono::steady_clock::now() < until) {
      }
      sched_yield();
    }
  });
  while (!started.load()) std::this_thread::yield();
  auto quiet = [] { return tutti::runnable_threads() <= tutti::online_cpus(); };
  // About a millisecond: the longest run, 32, eight times over, where the kernel took
  // thousands of yields.
  constexpr int kYields = 256;
  bool counted = false, moved = false;
  for (int round = 0; round < 100 && !counted; ++round) {
    // Longer than the longest pause between two looks at the machine's load
    // (core_sharing.cc), which a busy round may have brought about.
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    if (!quiet()) continue;
    // On the partner's CPU, free to go anywhere.
    pin_to_cpu(cpu);
    cr_assert_eq(pthread_setaffinity_np(pthread_self(), sizeof all, &all), 0);
    moved = false;
    for (int i = 0; i < kYields && !moved; ++i) {
      tutti::transport::yield_core();
      moved = sched_getcpu() != cpu;
    }
    counted = quiet();
  }
  stop.store(true);
  partner.join();
  if (!counted) {
    std::fprintf(stderr, "SKIP: the machine had more runnable threads than CPUs for 100 rounds: no CPU to move to\n");
    cr_skip_test("the machine had more runnable threads than CPUs for 100 rounds");
  }
  cr_assert(moved, "%d yields on CPU %d beside a partner that yields back did not move", kYields, cpu);
  cpu_set_t after;
  CPU_ZERO(&after);
  cr_assert_eq(sched_getaffinity(0, sizeof after, &after), 0);
  cr_assert(CPU_EQUAL(&after, &all), "the move left the thread with another affinity");
}
