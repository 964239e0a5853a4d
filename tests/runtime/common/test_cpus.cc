// allowed_cpus: the CPUs of this process's affinity, in increasing order, and only
// those: under a narrower affinity it lists just that CPU.
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>

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
