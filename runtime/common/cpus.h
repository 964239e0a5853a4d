// The CPUs this process may run on (its affinity: a cpuset, a Slurm allocation, taskset),
// for the launcher's --bind cpu and for shared memory's choice of how to wait; and what
// a waiting thread needs to move itself off a crowded CPU (transport/core_sharing.h).
#pragma once

#include <cstdint>
#include <vector>

namespace tutti {

// In increasing order; empty, with errno set, when the affinity cannot be read.
std::vector<int> allowed_cpus();

// The CPUs online on this machine.
int online_cpus();

// How many threads the whole machine has runnable at this moment, running or waiting
// for a CPU (the fourth field of /proc/loadavg, counted afresh at each read); -1 when
// it cannot be read.
int runnable_threads();

// The CPUs that share `cpu`'s last-level cache, itself included, in increasing order
// (sysfs); empty where the system does not say.
std::vector<int> last_level_cache_cpus(int cpu);

// Moves the calling thread to another CPU of its affinity, the (choice % n)-th of the
// n others that share its CPU's last-level cache, or of all n others where none does:
// a thread that leaves its cache, or its memory's node, reads from afar until the
// kernel brings it back. Narrowing the affinity to that CPU migrates the thread at
// once, and the affinity is widened back straight away, so the thread stays there
// until the scheduler moves it and keeps every CPU it had. Returns that CPU, or -1,
// with nothing changed, where the thread has a single CPU or its affinity cannot be set.
int move_to_another_cpu(uint64_t choice);

}  // namespace tutti
