#include "runtime/common/settings.h"

#include <strings.h>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::settings {
namespace {

// A constant's digits as text at compile time, for the table's default column.
template <int64_t value>
struct Decimal {
  static_assert(value >= 0);
  static constexpr auto text = [] {
    std::array<char, 21> digits{};
    int length = 0;
    for (int64_t rest = value; length == 0 || rest > 0; rest /= 10)
      digits[length++] = static_cast<char>('0' + rest % 10);
    for (int i = 0; i < length / 2; ++i) std::swap(digits[i], digits[length - 1 - i]);
    return digits;
  }();
};

constexpr Setting kTable[] = {
    {"TUTTI_INIT_METHOD", "url", "env://",
     "How ranks meet: tcp://HOST:PORT, file:///PATH or env:// (read the launcher's variables)."},
    {"TUTTI_RANK", "int", "", "This process's rank in [0, TUTTI_WORLD_SIZE); set by tutti launch."},
    {"TUTTI_WORLD_SIZE", "int", "", "How many ranks the job has; set by tutti launch."},
    {"TUTTI_LOCAL_RANK", "int", "", "This process's rank among the ranks on its node."},
    {"TUTTI_LOCAL_SIZE", "int", "", "How many ranks share this process's node."},
    {"TUTTI_NODE_RANK", "int", "", "The index of this process's node; set by tutti launch (--nodes emulates several)."},
    {"TUTTI_ADDR", "host:port", "", "Where the rendezvous store listens; set by tutti launch."},
    {"TUTTI_STORE_SERVER", "string", "rank0",
     "Who serves the store at TUTTI_ADDR: rank0, or launcher (set by tutti launch, which serves it itself)."},
    {"TUTTI_PORT", "int", "",
     "Port of the rendezvous store under Slurm, MPI or PMI (derived from the job and step ids when unset), "
     "and beside MASTER_ADDR (MASTER_PORT+1 when unset: MASTER_PORT is torch's store's)."},
    {"TUTTI_HOST", "string", "",
     "Address this rank advertises and, when it hosts the store, listens on; default: its hostname's address."},
    {"TUTTI_RELAY", "string", "auto",
     "on, off or auto (on from 2048 ranks on several nodes, 16000 on one): each node's local rank 0 serves a relay in "
     "front of the store, and "
     "its node's ranks reach the store through it, so the store holds a connection and a heartbeat per node, "
     "not per rank; needs a launcher that gives local ranks and the store's address (tutti launch, srun)."},
    {"TUTTI_RELAY_GROUP", "string", "auto",
     "relays of relays, where node relays are on: a number of nodes (2 or more) per group, 0 for none, or auto (groups "
     "of 64 nodes from 16384 ranks); the first node of each group (by the launcher's node index) serves the group's "
     "relay, in front of the store for the group's other nodes' relays, and listens at TUTTI_HOST (else the host "
     "name), which those nodes must reach; needs a launcher that gives node indexes (tutti launch, srun, torchrun)."},
    {"TUTTI_STORE_UNIX_SOCKET", "string", "on",
     "on or off: a store or relay also listens on a Unix socket named after its TCP address (Linux's abstract "
     "namespace), and a client on its machine connects there, which costs the kernel less than loopback TCP; off "
     "keeps both on TCP (e.g. to watch the traffic with tcpdump). A client takes only a socket of its own user."},
    {"TUTTI_INIT_TIMEOUT_MS", "int", Decimal<kDefaultInitTimeoutMs>::text.data(),
     "How long rendezvous may take before it fails and names the missing ranks."},
    {"TUTTI_OP_TIMEOUT_MS", "int", Decimal<kDefaultOpTimeoutMs>::text.data(),
     "How long one operation may take before it fails with TUTTI_ERR_TIMEOUT."},
    {"TUTTI_WAIT_REPORT_MS", "int", Decimal<kDefaultWaitReportMs>::text.data(),
     "How long a collective or a blocking send or receive may wait before it says, at warn level, what it "
     "waits for and which ranks are elsewhere (and where); again each time the wait doubles. 0: never."},
    {"TUTTI_HEARTBEAT_INTERVAL_MS", "int", "1000",
     "How often each rank's event loop tells the store it is alive (and what it is doing)."},
    {"TUTTI_HEARTBEAT_TIMEOUT_MS", "int", "20000",
     "How long a rank (or the store) may stay silent before it is declared lost and every operation "
     "with it fails with TUTTI_ERR_PEER_LOST; at least two intervals. A rank that computes without "
     "calling tutti keeps beating: heartbeats come from the event loop's thread."},
    {"TUTTI_TRACE", "string", "",
     "A folder: every process writes a timeline of its operations and its control plane there "
     "(rank-R.HOST.PID.json, Chrome trace JSON); tutti launch merges them into timeline.json, and tutti trace "
     "merges, shows and draws them (docs/trace.md)."},
    {"TUTTI_DUMP_SIGNAL", "string", "",
     "USR1 or USR2: on that signal, every communicator of the process writes its recent operations to "
     "stderr (what tutti_comm_dump writes), e.g. kill -USR1 PID on a hung rank."},
    {"TUTTI_CPU_PER_RANK", "string", "auto",
     "auto, yes or no: whether every rank has a CPU of its own, which the selector needs to take the hierarchical "
     "forms that win only then, and a node's all_gather to read its peers' private blocks (all_to_all and scatter "
     "from 16 KiB a rank then, else from 64 and 128 KiB; docs/collectives.md). auto counts, on each machine, the CPUs "
     "its ranks "
     "may run on (their affinity) against its ranks; yes or no overrides that, e.g. where a CPU quota leaves fewer "
     "cores than the affinity shows. Read on every rank, at creation and at a node's first all_gather, all_to_all "
     "or scatter of 16 KiB a rank or more: one rank's no, or every rank's yes, decides."},
    {"TUTTI_ALGO", "string", "",
     "Force algorithms per collective, e.g. all_reduce=ring,broadcast=binomial; tutti info lists the choices."},
    {"TUTTI_CHECK", "int", "0",
     "1: every collective first compares count, dtype, op and root across ranks and fails with "
     "TUTTI_ERR_MISMATCH naming the ranks and fields that differ (costs one small exchange per call); "
     "without it, a disagreement is still MISMATCH wherever the disagreeing ranks exchange a message."},
    {"TUTTI_LOG_LEVEL", "level", "warn", "error, warn, info or debug: what tutti writes to stderr."},
    {"TUTTI_SECRET", "secret", "",
     "The job's shared secret: the store and every rank prove they know it before any key is served; tutti "
     "launch makes a fresh one per job, and under srun or mpirun export the same one to every rank."},
};

}  // namespace

std::span<const Setting> table() { return kTable; }

bool is_secret(const Setting& setting) { return std::strcmp(setting.type, "secret") == 0; }

std::optional<std::string> text(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<int64_t> integer(const char* name, int64_t min, int64_t max) {
  auto value = text(name);
  if (!value) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(value->c_str(), &end, 10);
  if (errno != 0 || end == value->c_str() || *end != '\0' || parsed < min || parsed > max) {
    fail(Status::kInvalidArgument,
         concat(name, "=\"", *value, "\" is not an integer in [", min, ", ", max, "]; set it to one, or unset it"));
  }
  return parsed;
}

int log_level() {
  auto value = text("TUTTI_LOG_LEVEL");
  if (!value) return 1;
  const char* names[] = {"error", "warn", "info", "debug"};
  for (int level = 0; level < 4; ++level) {
    if (strcasecmp(value->c_str(), names[level]) == 0) return level;
  }
  // The logger cannot report through itself; say it once on stderr and keep the default.
  std::string line =
      concat("[tutti] WARN: TUTTI_LOG_LEVEL=\"", *value, "\" is not one of error, warn, info, debug; using warn\n");
  fputs(line.c_str(), stderr);
  return 1;
}

}  // namespace tutti::settings
