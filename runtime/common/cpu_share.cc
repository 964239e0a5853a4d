#include "runtime/common/cpu_share.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string>
#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/cpus.h"
#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/common/settings.h"

namespace tutti {

CpuShare this_process_cpu_share() {
  CpuShare share;
  if (auto claim = settings::text("TUTTI_CPU_PER_RANK"); claim && *claim != "auto") {
    if (*claim != "yes" && *claim != "no") {
      fail(Status::kInvalidArgument, concat("TUTTI_CPU_PER_RANK=\"", *claim,
                                            "\" is not auto, yes or no (auto, the default: each machine's ranks "
                                            "against the CPUs they may run on)"));
    }
    share.claim = *claim == "yes" ? CpuClaim::kOwn : CpuClaim::kShared;
  }
  // FNV-1a: the same on every rank, whatever its standard library.
  share.machine = 1469598103934665603ull;
  for (unsigned char c : kernel_boot_id()) share.machine = (share.machine ^ c) * 1099511628211ull;
  for (int cpu : allowed_cpus()) {
    share.cpu_bits |= uint64_t{1} << (cpu % 64);
    ++share.cpus;
  }
  return share;
}

bool every_rank_has_a_cpu(std::span<const CpuShare> ranks) {
  auto says_no = [](const CpuShare& rank) { return rank.claim == CpuClaim::kShared; };
  auto says_yes = [](const CpuShare& rank) { return rank.claim == CpuClaim::kOwn; };
  if (std::any_of(ranks.begin(), ranks.end(), says_no)) return false;
  if (std::all_of(ranks.begin(), ranks.end(), says_yes)) return true;
  struct Machine {
    int ranks = 0;
    uint64_t cpu_bits = 0;
    int widest = 0;  // the most CPUs one rank may run on
  };
  std::map<uint64_t, Machine> machines;
  for (const CpuShare& rank : ranks) {
    Machine& machine = machines[rank.machine];
    ++machine.ranks;
    machine.cpu_bits |= rank.cpu_bits;
    machine.widest = std::max(machine.widest, static_cast<int>(rank.cpus));
  }
  return std::all_of(machines.begin(), machines.end(), [](const std::pair<const uint64_t, Machine>& entry) {
    const Machine& machine = entry.second;
    return std::max(std::popcount(machine.cpu_bits), machine.widest) >= machine.ranks;
  });
}

}  // namespace tutti
