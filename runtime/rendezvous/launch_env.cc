#include "runtime/rendezvous/launch_env.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/rendezvous/host_port.h"
#include "runtime/rendezvous/hostlist.h"

namespace tutti::rendezvous {
namespace {

// One launcher's variables. Each is detected by its rank variable; a null name is a
// value that launcher does not give.
struct Launcher {
  const char* id;       // LaunchEnv::launcher
  const char* display;  // for messages
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_size;
  const char* node_rank;
  const char* hint;  // how to fix, the clause after the ';'
};

// OMPI_COMM_WORLD_NODE_RANK is not read as node_rank: Open MPI documents it as "the
// relative rank of this process on this node looking across all jobs", a local rank,
// not the index of the node.
constexpr Launcher kLaunchers[] = {
    {"tutti", "tutti launch", "TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_LOCAL_SIZE",
     "TUTTI_NODE_RANK",
     "check the tutti launch command, or set TUTTI_RANK in [0, TUTTI_WORLD_SIZE) and TUTTI_WORLD_SIZE >= 1 "
     "together"},
    {"torch", "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
     "check the torchrun command, or set TUTTI_RANK and TUTTI_WORLD_SIZE"},
    {"slurm", "Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, "SLURM_NODEID",
     "check the srun command, or set TUTTI_RANK and TUTTI_WORLD_SIZE"},
    {"openmpi", "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", nullptr, "check the mpirun command, or set TUTTI_RANK and TUTTI_WORLD_SIZE"},
    {"pmi", "PMI", "PMI_RANK", "PMI_SIZE", nullptr, nullptr, nullptr,
     "check the mpiexec command, or set TUTTI_RANK and TUTTI_WORLD_SIZE"},
};

constexpr const char* kAddressHint = "set TUTTI_ADDR to host:port, such as node01:29500 or [::1]:29500";

// Reads one launcher's variables, remembering each as "NAME=value" so that every
// message can show what it was given.
class Reader {
 public:
  Reader(const Environment& env, const Launcher& launcher, LaunchEnv& out)
      : env_(env), launcher_(launcher), out_(out) {}

  std::optional<std::string> text(const char* name) {
    if (name == nullptr) return std::nullopt;
    std::optional<std::string> value = env_(name);
    if (value) out_.variables.push_back(concat(name, "=", *value));
    return value;
  }

  // Strictly decimal: "3x", "", " 3" and "+3" are refused, and so is a value out of
  // [min, max]. hint is the fix to suggest, the launcher's own when null.
  std::optional<long> integer(const char* name, long min, long max, const char* hint = nullptr) {
    std::optional<std::string> value = text(name);
    if (!value) return std::nullopt;
    std::optional<long> parsed = parse_decimal(*value);
    if (!parsed) {
      invalid(concat(name, "=\"", *value, "\" is not a whole number"), hint);
    } else if (*parsed < min) {
      invalid(min == 0 ? concat(name, "=", *value, " is negative") : concat(name, "=", *value, " is below ", min),
              hint);
    } else if (*parsed > max) {
      invalid(concat(name, "=", *value, " is above ", max), hint);
    }
    return parsed;
  }

  [[noreturn]] void invalid(const std::string& what, const char* hint = nullptr) { report("not valid", what, hint); }
  [[noreturn]] void contradictory(const std::string& what) { report("contradictory", what, nullptr); }
  [[noreturn]] void incomplete(const std::string& what, const char* hint = nullptr) {
    report("incomplete", what, hint);
  }

  static std::optional<long> parse_decimal(std::string_view value) {
    size_t pos = value.size() > 1 && value[0] == '-' ? 1 : 0;
    if (pos == value.size()) return std::nullopt;
    long result = 0;
    for (size_t i = pos; i < value.size(); ++i) {
      char c = value[i];
      if (c < '0' || c > '9') return std::nullopt;
      if (result > (LONG_MAX - (c - '0')) / 10) return std::nullopt;
      result = result * 10 + (c - '0');
    }
    return pos == 1 ? -result : result;
  }

 private:
  // "<launcher> environment is <kind>: <what> (read <NAME=value, ...>); <fix>"
  [[noreturn]] void report(const char* kind, const std::string& what, const char* hint) {
    std::string read;
    for (const std::string& variable : out_.variables) read += (read.empty() ? "" : ", ") + variable;
    fail(Status::kInvalidArgument, concat(launcher_.display, " environment is ", kind, ": ", what, " (read ", read,
                                          "); ", hint != nullptr ? hint : launcher_.hint));
  }

  const Environment& env_;
  const Launcher& launcher_;
  LaunchEnv& out_;
};

// Slurm writes tasks per node as "2(x3),1": two tasks on each of the first three
// nodes, one on the fourth. Returns the count for node_id, or nullopt when the text
// does not parse, the node is not in it, or its total is not world_size (then it
// describes the allocation rather than this step, and is not trusted).
std::optional<int> slurm_tasks_on_node(std::string_view text, long node_id, long world_size) {
  long node = 0;
  long total = 0;
  std::optional<int> found;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(pos, end - pos);
    long repeat = 1;
    size_t paren = item.find('(');
    if (paren != std::string_view::npos) {
      if (item.size() < paren + 4 || item.substr(paren, 2) != "(x" || item.back() != ')') return std::nullopt;
      std::optional<long> times = Reader::parse_decimal(item.substr(paren + 2, item.size() - paren - 3));
      if (!times || *times < 1) return std::nullopt;
      repeat = *times;
      item = item.substr(0, paren);
    }
    std::optional<long> tasks = Reader::parse_decimal(item);
    if (!tasks || *tasks < 1 || *tasks > INT_MAX) return std::nullopt;
    if (repeat > INT_MAX || *tasks > (LONG_MAX - total) / repeat) return std::nullopt;
    if (node_id >= node && node_id - node < repeat) found = static_cast<int>(*tasks);
    node += repeat;
    total += *tasks * repeat;
    pos = end + 1;
  }
  if (total != world_size) return std::nullopt;
  return found;
}

void read_ranks(Reader& reader, const Launcher& launcher, LaunchEnv& out) {
  std::optional<long> rank = reader.integer(launcher.rank, 0, INT_MAX - 1);
  std::optional<long> size = reader.integer(launcher.world_size, 1, INT_MAX);
  std::optional<long> local_rank = reader.integer(launcher.local_rank, 0, INT_MAX - 1);
  std::optional<long> local_size = reader.integer(launcher.local_size, 1, INT_MAX);
  std::optional<long> node_rank = reader.integer(launcher.node_rank, 0, INT_MAX - 1);
  if (!size) {
    reader.incomplete(concat(launcher.rank, " is set but ", launcher.world_size, " is not"));
  }
  if (*rank >= *size) {
    reader.contradictory(concat(launcher.rank, "=", *rank, " is not below ", launcher.world_size, "=", *size));
  }
  if (local_size && *local_size > *size) {
    reader.contradictory(concat(launcher.local_size, "=", *local_size, " is above ", launcher.world_size, "=", *size));
  }
  if (local_rank && local_size && *local_rank >= *local_size) {
    reader.contradictory(
        concat(launcher.local_rank, "=", *local_rank, " is not below ", launcher.local_size, "=", *local_size));
  }
  if (local_rank && *local_rank >= *size) {
    reader.contradictory(
        concat(launcher.local_rank, "=", *local_rank, " is not below ", launcher.world_size, "=", *size));
  }
  out.rank = static_cast<int>(*rank);
  out.world_size = static_cast<int>(*size);
  out.local_rank = local_rank ? static_cast<int>(*local_rank) : -1;
  out.local_size = local_size ? static_cast<int>(*local_size) : -1;
  out.node_rank = node_rank ? static_cast<int>(*node_rank) : -1;
}

void read_slurm_local_size(Reader& reader, LaunchEnv& out) {
  if (out.node_rank < 0) return;
  // The step's own layout first: SLURM_TASKS_PER_NODE may describe the allocation.
  std::optional<std::string> layout = reader.text("SLURM_STEP_TASKS_PER_NODE");
  if (!layout) layout = reader.text("SLURM_TASKS_PER_NODE");
  if (!layout) return;
  std::optional<int> tasks = slurm_tasks_on_node(*layout, out.node_rank, out.world_size);
  if (!tasks || (out.local_rank >= 0 && out.local_rank >= *tasks)) return;
  out.local_size = *tasks;
}

// what is the message when port is not a number in 1..65535.
int read_port(Reader& reader, const std::string& port, const std::string& what, const char* hint) {
  std::optional<uint16_t> value = parse_port(port);
  if (!value) reader.invalid(what, hint);
  return *value;
}

void read_slurm_address(Reader& reader, LaunchEnv& out) {
  const char* lists[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"};
  for (const char* name : lists) {
    std::optional<std::string> list = reader.text(name);
    if (!list) continue;
    try {
      out.store_host = first_host(*list);
      out.store_host_is_slurm_node = true;
    } catch (const Error& error) {
      reader.invalid(concat(name, " cannot be read: ", error.what()), "check the srun command, or set TUTTI_ADDR");
    }
    break;
  }
  if (out.store_host.empty()) return;
  const char* fix = "set TUTTI_PORT to a port in 1..65535, or TUTTI_ADDR to host:port";
  if (std::optional<long> port = reader.integer("TUTTI_PORT", 1, 65535, fix)) {
    out.store_port = static_cast<int>(*port);
    return;
  }
  std::optional<long> job = reader.integer("SLURM_JOB_ID", 0, LONG_MAX, fix);
  std::optional<long> step = reader.integer("SLURM_STEP_ID", 0, LONG_MAX, fix);
  if (!job || !step) {
    reader.incomplete(
        concat(job ? "SLURM_STEP_ID" : "SLURM_JOB_ID", " is not set, so no store port can be derived for this step"),
        fix);
  }
  out.store_port = slurm_step_port(*job, *step);
}

void read_address(Reader& reader, LaunchEnv& out) {
  if (std::optional<std::string> addr = reader.text("TUTTI_ADDR")) {
    std::string port;
    if (!split_host_port(*addr, &out.store_host, &port)) {
      reader.invalid(concat("TUTTI_ADDR=", *addr, " is not of the form host:port"), kAddressHint);
    }
    std::string what = concat("TUTTI_ADDR=", *addr, " has port \"", port, "\", which is not in 1..65535");
    out.store_port = read_port(reader, port, what, kAddressHint);
    return;
  }
  std::optional<std::string> master = reader.text("MASTER_ADDR");
  std::optional<std::string> master_port = reader.text("MASTER_PORT");
  if (master || master_port) {
    const char* fix = "set MASTER_ADDR and MASTER_PORT together, or set TUTTI_ADDR to host:port";
    if (!master) reader.incomplete("MASTER_PORT is set but MASTER_ADDR is not", fix);
    if (!master_port) reader.incomplete("MASTER_ADDR is set but MASTER_PORT is not", fix);
    std::string host = *master;
    // torchrun users sometimes write an IPv6 address in brackets; connect needs it bare.
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    std::string what = concat("MASTER_PORT=", *master_port, " is not a port in 1..65535");
    int master_port_number = read_port(reader, *master_port, what, fix);
    out.store_host = host;
    // MASTER_PORT belongs to torch: rank 0's TCPStore of init_process_group listens
    // there, often in the same processes as tutti's store. tutti's store takes
    // TUTTI_PORT when set, else the port after it, so the two never fight over one
    // port, whichever starts first.
    const char* port_fix = "set TUTTI_PORT to a free port for tutti's store, or MASTER_PORT below 65535";
    if (std::optional<long> port = reader.integer("TUTTI_PORT", 1, 65535, port_fix)) {
      out.store_port = static_cast<int>(*port);
    } else if (master_port_number == 65535) {
      reader.invalid(
          "MASTER_PORT=65535 leaves no port for tutti's store, which listens on MASTER_PORT+1 "
          "(MASTER_PORT is torch's store's)",
          port_fix);
    } else {
      out.store_port = master_port_number + 1;
    }
    return;
  }
  out.under_pmix = reader.text("PMIX_NAMESPACE") && reader.text("PMIX_RANK");
  if (out.launcher == "slurm") {
    read_slurm_address(reader, out);
    return;
  }
  // No host is named (as under MPI or PMI), but TUTTI_PORT may still say where rank 0
  // should listen.
  const char* fix = "set TUTTI_PORT to a port in 1..65535, or unset it";
  if (std::optional<long> port = reader.integer("TUTTI_PORT", 1, 65535, fix)) out.store_port = static_cast<int>(*port);
}

// splitmix64's finalizer: every input bit changes about half the output bits.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

Environment process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::optional<LaunchEnv> read_launch_env(const Environment& env) {
  for (const Launcher& launcher : kLaunchers) {
    LaunchEnv out;
    out.launcher = launcher.id;
    Reader reader(env, launcher, out);
    if (!env(launcher.rank)) {
      // A size without a rank is half a launch, except under Slurm, where salloc and
      // sbatch shells carry SLURM_NTASKS without SLURM_PROCID; only srun tasks have both.
      if (launcher.id != std::string_view("slurm") && reader.text(launcher.world_size)) {
        reader.incomplete(concat(launcher.world_size, " is set but ", launcher.rank, " is not"));
      }
      continue;
    }
    read_ranks(reader, launcher, out);
    if (out.launcher == "slurm") {
      read_slurm_local_size(reader, out);
      out.node_name = reader.text("SLURMD_NODENAME").value_or("");
    }
    read_address(reader, out);
    return out;
  }
  return std::nullopt;
}

// The job id picks a pseudo-random base, and the step id is added to it: steps of one
// job get consecutive ports (mod 12768), so any 12768 consecutive steps never collide,
// while two steps of different jobs collide with odds of 1 in 12768. The ports stay
// below 32768, where Linux's ephemeral range (ip_local_port_range) starts by default:
// a port in that range can be held by any outgoing connection on the node, and was,
// under load in this project's tests (EADDRINUSE for rank 0's store).
int slurm_step_port(long job_id, long step_id) {
  constexpr uint64_t kFirst = 20000;
  constexpr uint64_t kCount = 32768 - kFirst;
  uint64_t base = mix(static_cast<uint64_t>(job_id)) % kCount;
  uint64_t offset = static_cast<uint64_t>(step_id) % kCount;
  return static_cast<int>(kFirst + (base + offset) % kCount);
}

}  // namespace tutti::rendezvous
