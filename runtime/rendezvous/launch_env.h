// What a launcher tells a process about its place in the job, read from the
// environment: tutti launch, torchrun-style variables, Slurm, Open MPI, PMI.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tutti::rendezvous {

// Looks a variable up; nullopt when unset or empty. Tests pass their own.
using Environment = std::function<std::optional<std::string>(const char* name)>;
Environment process_environment();

struct LaunchEnv {
  std::string launcher;  // "tutti", "torch", "slurm", "openmpi", "pmi"
  int rank = -1;
  int world_size = -1;
  int local_rank = -1;  // -1: not given
  int local_size = -1;
  int node_rank = -1;
  // The node's name where the launcher gives one that every step of the job shares
  // (Slurm's SLURMD_NODENAME, while SLURM_NODEID counts the nodes of one step only).
  std::string node_name;
  // Where the rendezvous store is, when the environment says; empty host otherwise.
  std::string store_host;
  int store_port = -1;
  // store_host is a Slurm node name, which may need Slurm to resolve (slurm_node.h).
  bool store_host_is_slurm_node = false;
  // A PMIx server runs beside this process (PMIX_NAMESPACE and PMIX_RANK are set:
  // mpirun, srun --mpi=pmix), which can carry the store's address (pmix_exchange.h).
  // Only looked for when no address was given (TUTTI_ADDR, MASTER_ADDR).
  bool under_pmix = false;
  // "NAME=value" for each variable that was read, in the order read, for messages.
  std::vector<std::string> variables;
};

// Reads the first launcher whose variables are present, in this order:
//   1. TUTTI_RANK / TUTTI_WORLD_SIZE / TUTTI_LOCAL_RANK / TUTTI_LOCAL_SIZE / TUTTI_NODE_RANK
//   2. RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE / GROUP_RANK (torch)
//   3. SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID / SLURM_NODEID (and SLURMD_NODENAME)
//   4. OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE (its _NODE_RANK is not a node index)
//   5. PMI_RANK / PMI_SIZE
// The store address, whatever the launcher: TUTTI_ADDR ("host:port"), else
// MASTER_ADDR with port TUTTI_PORT, else MASTER_PORT + 1 (MASTER_PORT is torch's
// store's: the two stores never share a port); without either, whether PMIx is there (under_pmix); and
// under Slurm the first host of SLURM_STEP_NODELIST
// (or SLURM_JOB_NODELIST, SLURM_NODELIST) with port TUTTI_PORT or one derived from
// SLURM_JOB_ID and SLURM_STEP_ID, so that two steps or jobs sharing nodes never pick
// the same port.
// Returns nullopt when no launcher's variables are present. Throws
// Error(kInvalidArgument) naming the variables read, and what to set, when they are
// incomplete or contradictory (a rank without a size, a rank >= size, a size < 1,
// a value that is not a number, a port out of range, an unparsable hostlist).
std::optional<LaunchEnv> read_launch_env(const Environment& env);

// The port derived for a Slurm step, in [20000, 32768): below Linux's default range of
// ephemeral ports, which outgoing connections take.
int slurm_step_port(long job_id, long step_id);

}  // namespace tutti::rendezvous
