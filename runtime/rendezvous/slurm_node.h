// The address of a Slurm node, for the store under srun. Slurm's node lists hold node
// names (NodeName), and on most clusters a node's name is its hostname; where the
// administrator gave a node an address of its own (NodeAddr), as a machine emulating
// several nodes does, the name may not resolve, and only Slurm knows the address.
#pragma once

#include <string>
#include <vector>

#include "runtime/common/deadline.h"

namespace tutti::rendezvous {

// node itself when it resolves; otherwise the NodeAddr that `scontrol show node`
// reports for it (one call, bounded by deadline and by 10 s). Throws
// Error(kInvalidArgument) naming the node, what was tried and what to set, when
// neither gives an address.
std::string slurm_node_address(const std::string& node, Deadline deadline);

// The NodeAddr field of one line of `scontrol show node -o` output; "" when absent.
std::string node_addr_field(const std::string& scontrol_output);

// A running srun step, for finding its store from outside it (tutti top --slurm).
struct SlurmStep {
  long job = 0;
  long step = 0;
  std::string nodes;  // its node list, in Slurm's hostlist syntax
};
// The running steps that `scontrol show step -o WHICH` lists (WHICH is "JOB" or
// "JOB.STEP"), without the batch and extern steps, which run no ranks. Throws
// Error(kInvalidArgument) with what scontrol said when it fails (no such job).
std::vector<SlurmStep> slurm_steps(const std::string& which, Deadline deadline);
// The running steps in `scontrol show step -o` output, one per line.
std::vector<SlurmStep> parse_slurm_steps(const std::string& scontrol_output);

}  // namespace tutti::rendezvous
