// core_sharing: the core counts as shared while at least half of the last 8 yields ran
// someone else, so one yield either way does not flip it; and a yield on a CPU where a
// busy thread runs does find it shared, before long.
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>

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
