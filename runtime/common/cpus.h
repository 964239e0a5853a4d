// The CPUs this process may run on (its affinity: a cpuset, a Slurm allocation, taskset),
// for the launcher's --bind cpu and for shared memory's choice of how to wait.
#pragma once

#include <vector>

namespace tutti {

// In increasing order; empty, with errno set, when the affinity cannot be read.
std::vector<int> allowed_cpus();

}  // namespace tutti
