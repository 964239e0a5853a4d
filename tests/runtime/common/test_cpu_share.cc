// every_rank_has_a_cpu: by machine, the CPUs its ranks may run on, all together,
// against its ranks, unless TUTTI_CPU_PER_RANK says otherwise; and this process's
// share, read from its affinity, its kernel's boot id and that setting.
#include <criterion/criterion.h>
#include <sched.h>

#include <cstdlib>
#include <string>

#include <vector>

#include "runtime/common/cpu_share.h"
#include "runtime/common/cpus.h"
#include "runtime/common/error.h"

using tutti::CpuClaim;
using tutti::CpuShare;
using tutti::every_rank_has_a_cpu;

namespace {

// A rank on `machine` that may run on CPUs [first, first + count).
CpuShare rank_on(uint64_t machine, int first, int count) {
  CpuShare share;
  share.machine = machine;
  for (int cpu = first; cpu < first + count; ++cpu) share.cpu_bits |= uint64_t{1} << (cpu % 64);
  share.cpus = count;
  return share;
}

}  // namespace

Test(cpu_share, unbound_ranks_have_a_cpu_each_up_to_the_machine_s_count, .timeout = 10) {
  // 16 CPUs, every rank free to run on all of them: 16 ranks fit, 17 do not.
  std::vector<CpuShare> ranks(16, rank_on(1, 0, 16));
  cr_assert(every_rank_has_a_cpu(ranks));
  ranks.push_back(rank_on(1, 0, 16));
  cr_assert_not(every_rank_has_a_cpu(ranks));
  // 4 ranks of emulated nodes on one 2-CPU machine, as this project's tests run them.
  cr_assert_not(every_rank_has_a_cpu(std::vector<CpuShare>(4, rank_on(7, 0, 2))));
}

Test(cpu_share, bound_ranks_count_the_cpus_of_all_of_them, .timeout = 10) {
  // Bound a core each (srun --cpu-bind=cores): 8 ranks on 8 different CPUs.
  std::vector<CpuShare> ranks;
  for (int cpu = 0; cpu < 8; ++cpu) ranks.push_back(rank_on(3, cpu, 1));
  cr_assert(every_rank_has_a_cpu(ranks));
  // Two bound to one CPU: 8 ranks on 7 CPUs.
  ranks.back() = rank_on(3, 0, 1);
  cr_assert_not(every_rank_has_a_cpu(ranks));
}

Test(cpu_share, each_machine_counts_alone, .timeout = 10) {
  // Two machines of 4 CPUs with 4 ranks each fit; a third rank count of 5 on the second
  // does not, whatever the first has to spare.
  std::vector<CpuShare> ranks;
  for (int i = 0; i < 4; ++i) ranks.push_back(rank_on(10, 0, 4));
  for (int i = 0; i < 4; ++i) ranks.push_back(rank_on(20, 0, 4));
  cr_assert(every_rank_has_a_cpu(ranks));
  ranks.push_back(rank_on(20, 0, 4));
  cr_assert_not(every_rank_has_a_cpu(ranks));
}

Test(cpu_share, past_64_cpus_the_count_errs_short_never_long, .timeout = 10) {
  // 128 ranks bound to CPUs 0-127: the bits fold onto 64, so 128 ranks are not seen to
  // fit (the safe answer); unbound ranks on 128 CPUs are, through one rank's count.
  std::vector<CpuShare> bound;
  for (int cpu = 0; cpu < 128; ++cpu) bound.push_back(rank_on(5, cpu, 1));
  cr_assert_not(every_rank_has_a_cpu(bound));
  cr_assert(every_rank_has_a_cpu(std::vector<CpuShare>(128, rank_on(5, 0, 128))));
  // CPUs 0 and 64 fold onto one bit: two ranks bound to them are counted on one CPU.
  cr_assert_not(every_rank_has_a_cpu(std::vector<CpuShare>{rank_on(5, 0, 1), rank_on(5, 64, 1)}));
}

Test(cpu_share, this_process_reads_its_affinity_and_machine, .timeout = 10) {
  const CpuShare mine = tutti::this_process_cpu_share();
  cr_assert_eq(mine.cpus, static_cast<int32_t>(tutti::allowed_cpus().size()));
  cr_assert_neq(mine.cpu_bits, 0u);
  // Another process of this machine names the same machine: here, a second read.
  cr_assert_eq(tutti::this_process_cpu_share().machine, mine.machine);
  // As many ranks as this process has CPUs fit here; one more does not.
  std::vector<CpuShare> ranks(static_cast<size_t>(mine.cpus), mine);
  cr_assert(every_rank_has_a_cpu(ranks));
  ranks.push_back(mine);
  cr_assert_not(every_rank_has_a_cpu(ranks));
}

Test(cpu_share, a_claim_overrides_the_count, .timeout = 10) {
  // 4 ranks on 2 CPUs: every rank's yes says they have a CPU each; one rank's no wins
  // over the others' yes; a yes among autos leaves the count to decide.
  std::vector<CpuShare> ranks(4, rank_on(7, 0, 2));
  for (CpuShare& rank : ranks) rank.claim = CpuClaim::kOwn;
  cr_assert(every_rank_has_a_cpu(ranks));
  ranks[2].claim = CpuClaim::kShared;
  cr_assert_not(every_rank_has_a_cpu(ranks));
  ranks[2].claim = CpuClaim::kAuto;
  cr_assert_not(every_rank_has_a_cpu(ranks));
  // A no on a machine with a CPU per rank.
  std::vector<CpuShare> roomy(4, rank_on(8, 0, 16));
  cr_assert(every_rank_has_a_cpu(roomy));
  roomy[0].claim = CpuClaim::kShared;
  cr_assert_not(every_rank_has_a_cpu(roomy));
}

Test(cpu_share, the_setting_is_read_and_a_bad_value_named, .timeout = 10) {
  setenv("TUTTI_CPU_PER_RANK", "yes", 1);
  cr_assert(tutti::this_process_cpu_share().claim == CpuClaim::kOwn);
  setenv("TUTTI_CPU_PER_RANK", "no", 1);
  cr_assert(tutti::this_process_cpu_share().claim == CpuClaim::kShared);
  setenv("TUTTI_CPU_PER_RANK", "auto", 1);
  cr_assert(tutti::this_process_cpu_share().claim == CpuClaim::kAuto);
  setenv("TUTTI_CPU_PER_RANK", "always", 1);
  try {
    tutti::this_process_cpu_share();
    cr_assert_fail("TUTTI_CPU_PER_RANK=always was accepted");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kInvalidArgument);
    cr_assert(
        std::string(error.what()).find("TUTTI_CPU_PER_RANK=\"always\" is not auto, yes or no") != std::string::npos,
        "%s", error.what());
  }
  unsetenv("TUTTI_CPU_PER_RANK");
  cr_assert(tutti::this_process_cpu_share().claim == CpuClaim::kAuto);
}
