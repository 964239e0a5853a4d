#include "launcher/options.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/common/concat.h"

namespace tutti::launcher {
namespace {

constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

// "--np=4" is split into name "--np" and value "4"; "-n4" into "-n" and "4".
struct Flag {
  std::string name;
  std::optional<std::string> inline_value;
};

Flag split_flag(const std::string& arg) {
  if (arg.rfind("--", 0) == 0) {
    size_t eq = arg.find('=');
    if (eq != std::string::npos) return {arg.substr(0, eq), arg.substr(eq + 1)};
    return {arg, std::nullopt};
  }
  if (arg.size() > 2 && arg[0] == '-' && arg[1] == 'n') return {"-n", arg.substr(2)};
  return {arg, std::nullopt};
}

// text as a whole decimal number, or nullopt when it is not one (or does not fit a long).
std::optional<long> whole_number(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return std::nullopt;
  return value;
}

std::optional<int> parse_ranks(const std::string& text, std::string* error) {
  std::optional<long> value = whole_number(text);
  if (!value) {
    *error = concat("-n \"", text, "\" is not a number; give the number of ranks to start, in [1, ", kMaxRanks, "]");
    return std::nullopt;
  }
  if (*value < 1 || *value > kMaxRanks) {
    *error = concat("-n ", text, " is out of range; give the number of ranks to start, in [1, ", kMaxRanks, "]");
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

std::optional<int> parse_nodes(const std::string& text, std::string* error) {
  std::optional<long> value = whole_number(text);
  if (!value || *value < 1 || *value > kMaxRanks) {
    *error = concat("--nodes \"", text, "\" is not a number of nodes in [1, ", kMaxRanks,
                    "]; give how many machines to emulate, e.g. --nodes 2");
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

std::optional<int64_t> parse_timeout_ms(const std::string& text, std::string* error) {
  errno = 0;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(seconds) || seconds <= 0 ||
      seconds > kMaxTimeoutSeconds) {
    *error = concat("--timeout \"", text, "\" is not a number of seconds in (0, ", kMaxTimeoutSeconds,
                    "]; give how long the whole job may run, e.g. --timeout 600");
    return std::nullopt;
  }
  int64_t ms = static_cast<int64_t>(std::ceil(seconds * 1000.0));
  return ms;
}

// Restarts are bounded so that a program that fails at once cannot loop forever.
constexpr int kMaxRestarts = 1000;

std::optional<int> parse_restarts(const std::string& text, std::string* error) {
  std::optional<long> value = whole_number(text);
  if (!value || *value < 0 || *value > kMaxRestarts) {
    *error = concat("--restart \"", text, "\" is not a number of restarts in [0, ", kMaxRestarts,
                    "]; give how many times in all a failed rank may be started again, e.g. --restart 3");
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

std::optional<bool> parse_bind(const std::string& text, std::string* error) {
  if (text == "cpu") return true;
  if (text == "none") return false;
  *error =
      concat("--bind \"", text, "\" is not cpu or none; give --bind cpu to run each rank on one CPU, or leave it out");
  return std::nullopt;
}

ParseResult fail_with(std::string error) {
  ParseResult result;
  result.kind = ParseResult::Kind::kError;
  result.error = std::move(error);
  return result;
}

}  // namespace

ParseResult parse_options(std::span<const std::string> args, const char* implied_program) {
  ParseResult result;
  LaunchOptions& options = result.options;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program
    Flag flag = split_flag(arg);
    auto value = [&](std::string* out) -> bool {
      if (flag.inline_value) {
        *out = *flag.inline_value;
        return true;
      }
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string text;
    std::string error;
    if (flag.name == "-h" || flag.name == "--help") {
      result.kind = ParseResult::Kind::kHelp;
      return result;
    } else if (flag.name == "-n" || flag.name == "--np") {
      if (!value(&text)) return fail_with(concat(flag.name, " needs a value, the number of ranks, e.g. -n 4"));
      auto ranks = parse_ranks(text, &error);
      if (!ranks) return fail_with(error);
      options.ranks = *ranks;
    } else if (flag.name == "--nodes") {
      if (!value(&text)) return fail_with("--nodes needs a value, the number of emulated nodes, e.g. --nodes 2");
      auto nodes = parse_nodes(text, &error);
      if (!nodes) return fail_with(error);
      options.nodes = *nodes;
    } else if (flag.name == "--bind") {
      if (!value(&text)) return fail_with("--bind needs a value, cpu or none, e.g. --bind cpu");
      auto bind = parse_bind(text, &error);
      if (!bind) return fail_with(error);
      options.bind_cpu = *bind;
    } else if (flag.name == "--timeout") {
      if (!value(&text)) return fail_with("--timeout needs a value, in seconds, e.g. --timeout 600");
      auto ms = parse_timeout_ms(text, &error);
      if (!ms) return fail_with(error);
      options.timeout_ms = *ms;
    } else if (flag.name == "--tag-output" && !flag.inline_value) {
      options.tag_output = true;
    } else if (flag.name == "--no-tag-output" && !flag.inline_value) {
      options.tag_output = false;
    } else if (flag.name == "--restart") {
      if (!value(&text)) return fail_with("--restart needs a value, how many restarts in all, e.g. --restart 3");
      auto restarts = parse_restarts(text, &error);
      if (!restarts) return fail_with(error);
      options.restarts = *restarts;
    } else if (flag.name == "--keep-going" && !flag.inline_value) {
      options.keep_going = true;
    } else if (flag.name == "--interactive" && !flag.inline_value) {
      options.interactive = true;
    } else {
      return fail_with(concat("unknown option \"", arg, "\"; see tutti ", implied_program ? "run" : "launch",
                              " --help (put -- before a ", implied_program ? "script" : "program",
                              " whose name starts with -)"));
    }
  }
  if (implied_program) options.argv.emplace_back(implied_program);
  options.argv.insert(options.argv.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (options.ranks == 0) {
    return fail_with(concat("missing -n N, the number of ranks to start; e.g. ",
                            implied_program ? "tutti run -n 4 script.lua" : "tutti launch -n 4 ./my_program"));
  }
  if (options.nodes > options.ranks) {
    return fail_with(concat("--nodes ", options.nodes, " is more than the ", options.ranks,
                            " ranks; each node needs a rank: give --nodes at most -n"));
  }
  if (options.argv.empty() || options.argv[0].empty()) {
    return fail_with(concat("missing the program to run; e.g. tutti launch -n ", options.ranks, " ./my_program"));
  }
  result.kind = ParseResult::Kind::kRun;
  return result;
}

std::optional<std::string> resolve_program(const std::string& program, const std::string& path_variable,
                                           std::string* error) {
  auto check = [](const std::string& path, int* why) {
    struct stat info;
    if (stat(path.c_str(), &info) != 0) {
      *why = errno;
      return false;
    }
    if (S_ISDIR(info.st_mode)) {
      *why = EISDIR;
      return false;
    }
    if (!S_ISREG(info.st_mode) || access(path.c_str(), X_OK) != 0) {
      *why = EACCES;
      return false;
    }
    return true;
  };
  int why = 0;
  if (program.find('/') != std::string::npos) {
    if (check(program, &why)) return program;
    if (why == ENOENT || why == ENOTDIR) {
      *error = concat("program \"", program, "\" does not exist; check the path");
    } else if (why == EISDIR) {
      *error = concat("program \"", program, "\" is a directory; give the program inside it");
    } else if (why == EACCES) {
      *error = concat("program \"", program, "\" is not executable; chmod +x it, or run it through its interpreter");
    } else {
      *error = concat("cannot run \"", program, "\": ", std::strerror(why));
    }
    return std::nullopt;
  }
  bool found_unusable = false;
  size_t start = 0;
  while (start <= path_variable.size()) {
    size_t colon = path_variable.find(':', start);
    if (colon == std::string::npos) colon = path_variable.size();
    std::string dir = path_variable.substr(start, colon - start);
    std::string candidate = dir.empty() ? program : concat(dir, "/", program);
    if (check(candidate, &why)) return dir.empty() ? concat("./", program) : candidate;
    if (why == EACCES || why == EISDIR) found_unusable = true;
    start = colon + 1;
  }
  if (found_unusable) {
    *error = concat("program \"", program,
                    "\" was found in PATH but is not an executable file; chmod +x it, or give its path");
  } else {
    *error = concat("program \"", program, "\" was not found in PATH; check the spelling, or give its path (./",
                    program, ")");
  }
  return std::nullopt;
}

const char* usage() {
  return "usage: tutti launch -n N [options] [--] PROGRAM [ARGS...]\n"
         "\n"
         "Starts N ranks of PROGRAM on this machine, hosts their rendezvous store, and\n"
         "prefixes each line they print with its rank. When a rank fails, the others are\n"
         "stopped, unless --keep-going. Each rank gets TUTTI_RANK, TUTTI_WORLD_SIZE,\n"
         "TUTTI_LOCAL_RANK, TUTTI_LOCAL_SIZE, TUTTI_NODE_RANK, TUTTI_ADDR, TUTTI_HOST,\n"
         "TUTTI_STORE_SERVER=launcher, TUTTI_INIT_METHOD (env:// unless set) and\n"
         "TUTTI_LAUNCHER_PID, and torch's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
         "GROUP_RANK, MASTER_ADDR and MASTER_PORT (a free port for torch's store, held\n"
         "for the job; tutti's is at TUTTI_ADDR); its stdin is /dev/null, except with\n"
         "--interactive.\n"
         "\n"
         "options:\n"
         "  -n N, --np N       how many ranks to start, 1 to 4096 (required)\n"
         "  --nodes K          emulate K machines: the ranks are numbered into K nodes in\n"
         "                     blocks (the first N % K nodes get one rank more), each rank\n"
         "                     gets its node's TUTTI_NODE_RANK (torch's GROUP_RANK), local\n"
         "                     rank and local size, and tutti treats them as K machines:\n"
         "                     shared memory within a node, UCX between nodes (with\n"
         "                     UCX_TLS=tcp, over TCP as between real machines); default 1\n"
         "  --bind cpu         run each rank on one CPU of those the launcher may use\n"
         "                     (rank r on the (r mod count)-th), so that it keeps its\n"
         "                     caches; its own threads share that CPU. --bind none (the\n"
         "                     default) lets the system place and move the ranks\n"
         "  --timeout SECONDS  stop every rank when the whole job runs longer, and exit 124\n"
         "  --tag-output       prefix each output line with \"[RANK] \" (the default)\n"
         "  --no-tag-output    print lines as they are (still whole lines, never mixed)\n"
         "  --keep-going       when a rank fails, let the others run on: they see it as a\n"
         "                     lost peer (TUTTI_ERR_PEER_LOST) and may shrink and go on\n"
         "  --restart N        when a rank fails, start it again (N times in all at most);\n"
         "                     the others run on. The new process gets TUTTI_JOIN=1 and\n"
         "                     joins the job as one of the ranks a tutti_comm_grow adds\n"
         "                     (the tutti script runner does this by itself); its output\n"
         "                     is tagged \"[R+K]\", rank R's K-th restart. A rank the store\n"
         "                     declares lost while it still runs (frozen) is killed first\n"
         "                     (docs/elastic.md)\n"
         "  --interactive      rank 0 reads and writes the launcher's terminal directly, in\n"
         "                     its process group, untagged, and Ctrl-C is passed on to the\n"
         "                     ranks without stopping them (the default for `tutti launch\n"
         "                     -n N tutti`, the REPL, when stdin is a terminal)\n"
         "  -h, --help         print this help\n"
         "\n"
         "exit status:\n"
         "  0        every rank exited 0\n"
         "  1-255    the first rank to fail exited with this code, or 128+N when it was\n"
         "           killed by signal N (the other ranks are then stopped, unless\n"
         "           --keep-going); with --restart, a rank started again that ends well\n"
         "           makes up for its failure\n"
         "  2        bad usage, or the program cannot be found or run\n"
         "  124      --timeout passed\n"
         "  127      a rank could not be started (its process not made, or exec failed)\n"
         "  129/130/143  the launcher got SIGHUP/SIGINT/SIGTERM and passed it on\n";
}

const char* run_usage() {
  return "usage: tutti run -n N [options] [--] [SCRIPT.lua [ARGS...]]\n"
         "\n"
         "Runs SCRIPT.lua on N ranks of this machine, or with no script the REPL: the\n"
         "same as tutti launch -n N [options] tutti [SCRIPT.lua [ARGS...]], with the\n"
         "same options (tutti launch --help).\n";
}

NodePlace node_place(int rank, int ranks, int nodes) {
  const int base = ranks / nodes;
  const int larger = ranks % nodes;  // the first `larger` nodes hold base + 1 ranks
  const int in_larger = larger * (base + 1);
  NodePlace place;
  if (rank < in_larger) {
    place.node = rank / (base + 1);
    place.local_rank = rank % (base + 1);
    place.local_size = base + 1;
  } else {
    place.node = larger + (rank - in_larger) / base;
    place.local_rank = (rank - in_larger) % base;
    place.local_size = base;
  }
  return place;
}

}  // namespace tutti::launcher
