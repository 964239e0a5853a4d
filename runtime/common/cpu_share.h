// Whether every rank of a communicator has a CPU of its own. Some forms win only then:
// hierarchical ones (collectives/selector.cc), with a core per rank, where a node's
// ranks that wait while their leaders talk across nodes cost nothing; and reading
// peers' memory on one node (transport/shm/group_peer_reads.cc). Where ranks
// outnumber cores (emulated nodes on a small machine, an oversubscribed job), they
// take the cores the others need. Ranks learn it from each other, in the hierarchy's
// layout exchange at creation (collectives/hierarchy.cc) or in a shared-memory group's
// first call that may read peers, so that every rank decides alike.
// TUTTI_CPU_PER_RANK=yes or no overrides the count, where the affinity misleads (a CPU
// quota it does not show).
#pragma once

#include <cstdint>
#include <span>

namespace tutti {

// What TUTTI_CPU_PER_RANK says on a rank: auto (count), yes or no.
enum class CpuClaim : int8_t { kAuto, kOwn, kShared };

// What a rank tells the others about the CPUs it runs on: fixed size, to travel in an
// all-gather.
struct CpuShare {
  uint64_t machine = 0;   // a hash of its kernel's boot id: ranks with the same one share its CPUs
  uint64_t cpu_bits = 0;  // the CPUs it may run on (its affinity), CPU c as bit c % 64
  int32_t cpus = 0;       // how many those are
  CpuClaim claim = CpuClaim::kAuto;
};

// This process's. Throws Error(kInvalidArgument) naming TUTTI_CPU_PER_RANK when it is
// not auto, yes or no.
CpuShare this_process_cpu_share();

// Whether, on every machine, the CPUs that its ranks may run on, all together, number
// at least its ranks: unbound ranks each see all of the machine's (a cpuset's), ranks
// bound to a core each see theirs. Past 64 CPUs the bits fold onto each other, so the
// count may come out short, never long: the answer is then no, which is what the
// selector assumes without this. Overridden where a rank's claim says no, or where
// every rank's says yes.
bool every_rank_has_a_cpu(std::span<const CpuShare> ranks);

}  // namespace tutti
