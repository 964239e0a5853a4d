#include "runtime/rendezvous/plan.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/rendezvous/host_port.h"
#include "runtime/rendezvous/pmix_exchange.h"

namespace tutti::rendezvous {
namespace {

constexpr const char* kMethods = "use tcp://HOST:PORT, file:///PATH or env://";
// TUTTI_RELAY=auto puts relays in front of the store from this many ranks on several
// nodes: where one store's connections, and its heartbeats, start to cost more than a
// hop. On one node only past kRelayOneNodeRanks, near the store's 16,384 connections:
// there a relay would only make its host's ranks lost with it (a job that heals
// shrinks past a lost rank, not past a lost relay).
constexpr int kRelayAutoRanks = 2048;
constexpr int kRelayOneNodeRanks = 16000;
// TUTTI_RELAY_GROUP=auto (the default) groups nodes by kRelayGroupAutoNodes from
// kRelayGroupAutoRanks ranks on: 100,000 ranks on nodes of 8 make 12,500 node relays,
// whose heartbeats alone (11 us each, docs/benchmarks.md) would take 14% of the store's
// core; in groups of 64 they make 196.
constexpr int kRelayGroupAutoRanks = 16384;
constexpr int kRelayGroupAutoNodes = 64;

// tcp://HOST:PORT, after the scheme; api starts the message of a bad one.
void read_tcp_address(const std::string& method, Plan* plan, const char* api) {
  std::string port;
  std::optional<uint16_t> number;
  if (split_host_port(method.substr(6), &plan->store_host, &port)) number = parse_port(port);
  if (!number) {
    fail(Status::kInvalidArgument,
         concat(api, ": init method \"", method,
                "\" is not HOST:PORT with a port in 1..65535; write it as tcp://127.0.0.1:29500 or tcp://[::1]:29500"));
  }
  plan->store_port = *number;
}

// file:///PATH, after the scheme.
void read_file_path(const std::string& method, Plan* plan, const char* api) {
  plan->file_path = method.substr(7);
  if (plan->file_path.empty() || plan->file_path.front() != '/') {
    fail(Status::kInvalidArgument,
         concat(api, ": init method \"", method, "\" has no absolute path; write file:///shared/dir/rendezvous-file"));
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? "none" : text;
}

// What tells this process's node from the others: the launcher's node name (Slurm's,
// the same in every step of the job, so that a spare started as a step of its own
// joins its node's shared memory), else its node index (tutti launch's emulated nodes,
// and Slurm's, which share a hostname), else the hostname.
std::string node_key_of(const std::optional<LaunchEnv>& launch) {
  if (launch && !launch->node_name.empty()) return concat("node:", launch->node_name);
  if (launch && launch->node_rank >= 0) return concat("node#", launch->node_rank);
  return hostname();
}

// Rank and world size: the config's when given, else the launcher's.
void place_rank(const Request& request, const std::optional<LaunchEnv>& launch, Plan* plan) {
  if (request.world_size == 0 || request.world_size < -1) {
    fail(Status::kInvalidArgument, concat("tutti_comm_init: config.world_size is ", request.world_size,
                                          "; use a world size of at least 1, or -1 to read it from the environment"));
  }
  if (request.rank < -1) {
    fail(Status::kInvalidArgument, concat("tutti_comm_init: config.rank is ", request.rank,
                                          "; use a rank of at least 0, or -1 to read it from the environment"));
  }
  plan->rank = request.rank >= 0 ? request.rank : (launch ? launch->rank : -1);
  plan->world_size = request.world_size > 0 ? request.world_size : (launch ? launch->world_size : -1);
  plan->launcher = launch ? launch->launcher : "config";
  if (launch) plan->variables = launch->variables;
  if (plan->rank < 0 || plan->world_size < 0) {
    fail(Status::kInvalidArgument,
         concat("tutti_comm_init: this process's ", plan->rank < 0 ? "rank" : "world size", " is unknown: config.",
                plan->rank < 0 ? "rank" : "world_size",
                " is -1 and no launcher said it (variables read: ", joined(plan->variables),
                "); run under tutti launch, srun or mpirun, or set config.rank and config.world_size"));
  }
  if (plan->rank >= plan->world_size) {
    const char* source_rank = request.rank >= 0 ? "config.rank" : "the environment";
    fail(Status::kInvalidArgument, concat("tutti_comm_init: rank ", plan->rank, " (from ", source_rank,
                                          ") is outside a world of ", plan->world_size, " ranks (variables read: ",
                                          joined(plan->variables), "); use a rank in [0, ", plan->world_size - 1, "]"));
  }
  // The launcher's local rank, local size and node index describe the launcher's
  // world. A config that sets another world size makes a different set of ranks
  // (a local size of 4 in a world of 2 would turn shared memory off), so the meeting
  // works the places out from the node keys instead. The launcher's node id still
  // names this process's node.
  if (launch && launch->world_size == plan->world_size) {
    plan->local_rank = launch->local_rank;
    plan->local_size = launch->local_size;
    plan->node_rank = launch->node_rank;
  }
  plan->node_key = node_key_of(launch);
}

// A program started alone (env://, no launcher's variables, no store address, no
// other place in the config) is rank 0 of a world of one, as MPI and mpi4py
// singletons are: it serves its own store on a free loopback port. A store address
// without a rank is still an error: that is a launcher half set up, not a program
// run alone.
bool runs_alone(const Request& request, const std::optional<LaunchEnv>& launch, const Environment& env) {
  if (launch) return false;
  for (const char* name : {"TUTTI_ADDR", "MASTER_ADDR", "MASTER_PORT"}) {
    if (env(name)) return false;
  }
  return (request.rank == -1 || request.rank == 0) && (request.world_size == -1 || request.world_size == 1);
}

void plan_world_of_one(Plan* plan) {
  plan->rank = 0;
  plan->world_size = 1;
  plan->local_rank = 0;
  plan->local_size = 1;
  plan->node_rank = 0;
  plan->node_key = hostname();
  plan->launcher = "none (a world of one)";
  plan->store_host = "127.0.0.1";
  plan->store_port = 0;
  plan->serve_store = true;
}

std::string advertised_host(const Environment& env) {
  auto host = env("TUTTI_HOST");
  return host ? *host : hostname();
}

// The config's init method, else TUTTI_INIT_METHOD's, else env://; an unknown one is
// reported before anything else is read: it is the first thing wrong.
std::string resolve_method(const std::string& configured, const Environment& env, const char* api) {
  std::string method = !configured.empty() ? configured : env("TUTTI_INIT_METHOD").value_or("env://");
  if (method.rfind("tcp://", 0) != 0 && method.rfind("file://", 0) != 0 && method != "env://") {
    fail(Status::kInvalidArgument, concat(api, ": init method \"", method, "\" is not known; ", kMethods));
  }
  return method;
}

// Relays of relays: TUTTI_RELAY_GROUP=N (nodes per group, at least 2), 0 (none), or
// auto (the default). Nodes are grouped by the launcher's node index, so a launcher
// that gives none (mpirun) gets none.
void plan_relay_groups(Plan* plan, const Environment& env) {
  const std::string setting = env("TUTTI_RELAY_GROUP").value_or("auto");
  int nodes = 0;
  if (setting == "auto") {
    nodes = plan->world_size >= kRelayGroupAutoRanks ? kRelayGroupAutoNodes : 0;
  } else if (setting != "0") {
    char* end = nullptr;
    const long value = std::strtol(setting.c_str(), &end, 10);
    if (end == setting.c_str() || *end != '\0' || value < 2 || value > 1000000) {
      fail(Status::kInvalidArgument,
           concat("tutti_comm_init: TUTTI_RELAY_GROUP=\"", setting,
                  "\" is not a number of nodes from 2 up, 0 (no relays of relays) or auto (the default: groups of ",
                  kRelayGroupAutoNodes, " nodes from ", kRelayGroupAutoRanks, " ranks)"));
    }
    nodes = static_cast<int>(value);
  }
  if (nodes == 0 || plan->node_rank < 0) return;
  plan->relay_group = plan->node_rank / nodes;
  plan->leads_relay_group = plan->node_rank % nodes == 0;
  plan->relay_host = advertised_host(env);
}

// Node relays (store/relay.h): TUTTI_RELAY=on, off, or auto (the default). A node's
// local rank 0 serves its relay and writes where in a file of the node's (named by
// the job's store and the node); the node's ranks read it and connect there.
void plan_relays(Plan* plan, const Environment& env) {
  const std::string setting = env("TUTTI_RELAY").value_or("auto");
  if (setting != "on" && setting != "off" && setting != "auto") {
    fail(Status::kInvalidArgument,
         concat("tutti_comm_init: TUTTI_RELAY=\"", setting, "\" is not on, off or auto (the default: relays from ",
                kRelayAutoRanks, " ranks on several nodes)"));
  }
  const bool one_node = plan->local_size == plan->world_size;
  if (setting == "off" || (setting == "auto" && plan->world_size < (one_node ? kRelayOneNodeRanks : kRelayAutoRanks))) {
    return;
  }
  std::string missing;
  if (plan->local_rank < 0) {
    missing = "no launcher said which ranks share a node (LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK)";
  } else if (plan->store_port == 0 || plan->store_via_pmix) {
    missing = "the store's port is known only once it serves (file://, PMIx), too late for a relay to name it";
  }
  if (!missing.empty()) {
    if (setting == "on") {
      fail(Status::kInvalidArgument,
           concat("tutti_comm_init: TUTTI_RELAY=on, but ", missing,
                  "; run under tutti launch, or srun with a store address (TUTTI_ADDR), or unset TUTTI_RELAY"));
    }
    return;
  }
  std::string name;
  for (char c : concat(plan->store_host, "-", plan->store_port, "-", plan->node_key)) {
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  }
  plan->through_relay = true;
  plan->serve_relay = plan->local_rank == 0;
  plan->relay_file = concat(env("TMPDIR").value_or("/tmp"), "/tutti-", getuid(), "-relay-", name);
  plan_relay_groups(plan, env);
}

}  // namespace

std::string relay_group_key(int group) { return concat("tutti.store/relay/group/", group); }

Plan make_plan(const Request& request, const Environment& env) {
  Plan plan;
  plan.init_method = resolve_method(request.init_method, env, "tutti_comm_init");
  const std::string& method = plan.init_method;
  bool is_tcp = method.rfind("tcp://", 0) == 0;
  bool is_file = method.rfind("file://", 0) == 0;
  bool is_env = method == "env://";

  const std::optional<LaunchEnv> launch = read_launch_env(env);
  plan.secret = env("TUTTI_SECRET").value_or("");
  if (is_env && runs_alone(request, launch, env)) {
    plan_world_of_one(&plan);
    return plan;
  }
  place_rank(request, launch, &plan);

  if (is_tcp) {
    read_tcp_address(method, &plan, "tutti_comm_init");
    plan.serve_store = plan.rank == 0;
  } else if (is_file) {
    read_file_path(method, &plan, "tutti_comm_init");
    plan.store_host = advertised_host(env);
    plan.serve_store = plan.rank == 0;
  } else {
    bool given = launch && !launch->store_host.empty() && !launch->store_host_is_slurm_node;
    // PMIx, where it is there, before a host guessed from Slurm's node list: it needs
    // no name resolution and no port chosen in advance. A build without PMIx still
    // uses Slurm's node list, and says how to do without PMIx only where there is none.
    if (launch && launch->under_pmix && !given && (pmix_built() || launch->store_host.empty())) {
      plan.store_via_pmix = true;
      plan.store_host = advertised_host(env);
      plan.store_port = launch->store_host.empty() && launch->store_port > 0 ? launch->store_port : 0;
      plan.serve_store = plan.rank == 0;
      plan_relays(&plan, env);
      return plan;
    }
    if (!launch || launch->store_host.empty()) {
      fail(Status::kInvalidArgument,
           concat("tutti_comm_init: env:// found no rendezvous address (variables read: ", joined(plan.variables),
                  "); set TUTTI_ADDR=HOST:PORT, or MASTER_ADDR and MASTER_PORT, or run under tutti launch, srun, "
                  "or a launcher with PMIx (mpirun)"));
    }
    plan.store_host = launch->store_host;
    plan.store_host_is_slurm_node = launch->store_host_is_slurm_node;
    plan.store_port = static_cast<uint16_t>(launch->store_port);
    // tutti launch serves the store itself and says so; otherwise rank 0 serves it.
    bool launcher_serves = env("TUTTI_STORE_SERVER").value_or("rank0") == "launcher";
    plan.serve_store = plan.rank == 0 && !launcher_serves;
    if (launcher_serves) plan.store_owner = "tutti launch";
  }
  plan_relays(&plan, env);
  return plan;
}

Plan make_join_plan(const std::string& init_method, const Environment& env) {
  constexpr const char* kApi = "tutti_comm_join";
  Plan plan;
  plan.init_method = resolve_method(init_method, env, kApi);
  const std::string& method = plan.init_method;
  const std::optional<LaunchEnv> launch = read_launch_env(env);
  plan.secret = env("TUTTI_SECRET").value_or("");
  plan.launcher = launch ? launch->launcher : "config";
  if (launch) plan.variables = launch->variables;
  plan.node_key = node_key_of(launch);
  if (method.rfind("tcp://", 0) == 0) {
    read_tcp_address(method, &plan, kApi);
    return plan;
  }
  if (method.rfind("file://", 0) == 0) {
    read_file_path(method, &plan, kApi);
    return plan;
  }
  const char* fix =
      "set TUTTI_ADDR to the job's store (host:port; tutti launch --restart sets it for the ranks it restarts), "
      "or the init method to tcp://HOST:PORT";
  if (launch && launch->store_host_is_slurm_node) {
    // Slurm's node list and step id name this process's own step, not the job's first.
    fail(Status::kInvalidArgument,
         concat(kApi,
                ": under srun, a joiner cannot tell where the job's store is from Slurm's variables (they "
                "describe its own step); ",
                fix));
  }
  if (launch && !launch->store_host.empty()) {
    plan.store_host = launch->store_host;
    plan.store_port = static_cast<uint16_t>(launch->store_port);
    if (env("TUTTI_STORE_SERVER").value_or("rank0") == "launcher") plan.store_owner = "tutti launch";
    return plan;
  }
  // No launcher's variables, but perhaps the store's address alone: a joiner started by hand.
  std::string port;
  std::optional<uint16_t> number;
  const std::optional<std::string> address = launch ? std::nullopt : env("TUTTI_ADDR");
  if (address && split_host_port(*address, &plan.store_host, &port)) number = parse_port(port);
  if (!number) {
    fail(Status::kInvalidArgument,
         concat(kApi, ": env:// found no address of the job's store",
                address ? concat(" (TUTTI_ADDR=", *address, " is not host:port)") : std::string(),
                " (variables read: ", joined(plan.variables), "); ", fix));
  }
  plan.store_port = *number;
  return plan;
}

}  // namespace tutti::rendezvous
