// allowed_cpus: the CPUs of this process's affinity, in increasing order, and only
// those: under a narrower affinity it lists just that CPU. runnable_threads counts a
// spinning thread. last_level_cache_cpus lists a CPU among its own cache's.
// move_to_another_cpu lands the thread on another CPU of its affinity, one that shares
// its cache where there is one, leaves the affinity as it was, and cannot move a
// thread with one CPU.
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "runtime/common/cpus.h"

Test(cpus, the_affinity_in_order, .timeout = 10) {
  cpu_set_t set;
  CPU_ZERO(&set);
  cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
  const std::vector<int> cpus = tutti::allowed_cpus();
  cr_assert_eq(static_cast<int>(cpus.size()), CPU_COUNT(&set));
  for (size_t i = 0; i < cpus.size(); ++i) {
    cr_assert(CPU_ISSET(cpus[i], &set), "CPU %d is not in the affinity", cpus[i]);
    if (i > 0) cr_assert_lt(cpus[i - 1], cpus[i]);
  }
  // Narrowed to its last CPU, the process lists that one alone.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus.back(), &one);
  cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
  const std::vector<int> narrowed = tutti::allowed_cpus();
  cr_assert_eq(narrowed.size(), 1u);
  cr_assert_eq(narrowed[0], cpus.back());
  cr_assert_eq(sched_setaffinity(0, sizeof set, &set), 0);
}

Test(cpus, a_spinning_thread_is_counted_runnable, .timeout = 10) {
  cr_assert_geq(tutti::runnable_threads(), 1, "this thread runs as it reads");
  std::atomic<bool> started{false}, stop{false};
  std::thread spinning([&] {
    started.store(true);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (!started.load()) std::this_thread::yield();
  const int runnable = tutti::runnable_threads();
  stop.store(true);
  spinning.join();
  cr_assert_geq(runnable, 2, "this thread and a spinning one, but /proc/loadavg counted %d", runnable);
  cr_assert_geq(tutti::online_cpus(), 1);
}

Test(cpus, a_cpu_shares_its_own_cache, .timeout = 10) {
  const int cpu = sched_getcpu();
  const std::vector<int> cache = tutti::last_level_cache_cpus(cpu);
  if (cache.empty()) {
    std::fprintf(stderr, "SKIP: sysfs says nothing of CPU %d's caches\n", cpu);
    cr_skip_test("no cache information in sysfs");
  }
  cr_assert(std::is_sorted(cache.begin(), cache.end()));
  cr_assert(std::find(cache.begin(), cache.end(), cpu) != cache.end(), "CPU %d is not among its cache's CPUs", cpu);
  cr_assert(tutti::last_level_cache_cpus(-1).empty(), "no CPU -1");
}

Test(cpus, a_move_lands_on_another_cpu_and_keeps_the_affinity, .timeout = 10) {
  cpu_set_t all;
  CPU_ZERO(&all);
  cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
  const std::vector<int> cpus = tutti::allowed_cpus();
  if (cpus.size() < 2) {
    std::fprintf(stderr, "SKIP: moving needs 2 CPUs, and this process may run on %zu\n", cpus.size());
    cr_skip_test("moving needs 2 CPUs");
  }
  for (uint64_t choice = 0; choice < 4; ++choice) {
    const int before = sched_getcpu();
    const std::vector<int> cache = tutti::last_level_cache_cpus(before);
    const bool cache_has_another =
        std::any_of(cache.begin(), cache.end(), [&](int cpu) { return cpu != before && CPU_ISSET(cpu, &all); });
    const int target = tutti::move_to_another_cpu(choice);
    const int after = sched_getcpu();
    cr_assert_neq(target, -1, "move %lu failed", static_cast<unsigned long>(choice));
    cr_assert_neq(target, before, "moved to CPU %d, where it already was", target);
    cr_assert(CPU_ISSET(target, &all), "moved to CPU %d, outside the affinity", target);
    if (cache_has_another) {
      cr_assert(std::find(cache.begin(), cache.end(), target) != cache.end(),
                "moved from CPU %d to CPU %d, which does not share its cache, though another does", before, target);
    }
    cr_assert_eq(after, target, "asked to move to CPU %d, runs on %d", target, after);
    cpu_set_t now;
    CPU_ZERO(&now);
    cr_assert_eq(sched_getaffinity(0, sizeof now, &now), 0);
    cr_assert(CPU_EQUAL(&now, &all), "the move left the thread with another affinity");
  }
  // A thread with one CPU has nowhere to go.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[0], &one);
  cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
  cr_assert_eq(tutti::move_to_another_cpu(0), -1);
  cpu_set_t now;
  CPU_ZERO(&now);
  cr_assert_eq(sched_getaffinity(0, sizeof now, &now), 0);
  cr_assert(CPU_EQUAL(&now, &one), "a refused move changed the affinity");
  cr_assert_eq(sched_setaffinity(0, sizeof all, &all), 0);
}
