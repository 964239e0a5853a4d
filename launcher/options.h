// `tutti launch` command-line parsing and the checks done before anything starts:
// the rank count, the job timeout, output tagging, and the program, resolved to a
// path that exists and is executable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tutti::launcher {

inline constexpr int kMaxRanks = 4096;

struct LaunchOptions {
  int ranks = 0;
  // Emulated nodes (--nodes K): the ranks are numbered into K nodes, in blocks as
  // Slurm's block distribution does, so that the runtime treats them as K machines
  // (shared memory within one, UCX between them) while they all run here.
  int nodes = 1;
  // --bind cpu: each rank runs on one CPU of those the launcher may use, rank r on the
  // (r mod count)-th, so that a rank keeps its caches and its memory's path (on a
  // machine or VM whose cores sit apart, a rank moved to another core reads what it
  // left in the first one's cache from afar). Off by default, as under torchrun: a
  // rank's own threads (OpenMP, data loaders) would share its one CPU.
  bool bind_cpu = false;
  int64_t timeout_ms = -1;  // the whole job; -1: none
  bool tag_output = true;
  bool keep_going = false;  // a failed rank does not stop the others (fault-tolerant jobs)
  // --restart N: a rank that fails is started again, N times in all at most; the new
  // process has TUTTI_JOIN=1 and joins the job as the survivors grow (tutti_comm_join).
  int restarts = 0;
  // Rank 0 gets the launcher's stdin, stdout, stderr and process group (the terminal,
  // for the tutti REPL); the other ranks keep /dev/null and tagged pipes. SIGINT is
  // passed on without stopping the job, since Ctrl-C there cancels a statement.
  bool interactive = false;
  std::vector<std::string> argv;  // argv[0] as the user wrote it, then its arguments
  std::string program_path;       // argv[0] resolved against PATH, filled by resolve_program
};

struct ParseResult {
  enum class Kind { kRun, kHelp, kError };
  Kind kind = Kind::kError;
  LaunchOptions options;  // for kRun
  std::string error;      // for kError: one line, without the "tutti launch: " prefix
};

// Parses the arguments after "launch". Options end at "--" or at the first argument
// that is not an option, so `tutti launch -n 2 prog -n 3` passes "-n 3" to prog.
// Accepts -n N, --np N, --np=N, --nodes K, --timeout S, --timeout=S (seconds, decimals allowed),
// --bind cpu|none, --tag-output, --no-tag-output, --keep-going, --restart N, --interactive,
// -h/--help. Does not look
// at the file system.
// For `tutti run`, implied_program is the program (the tutti binary itself), and what
// follows the options are its arguments, possibly none (a script and its arguments).
ParseResult parse_options(std::span<const std::string> args, const char* implied_program = nullptr);

// The path execve should get for program: itself when it holds a '/', else the first
// executable regular file named so in path_variable's directories (an empty entry
// means the current directory, as in execvp). Returns nullopt with *error set to a
// one-line reason and fix when there is none.
std::optional<std::string> resolve_program(const std::string& program, const std::string& path_variable,
                                           std::string* error);

// The usage texts of `tutti launch --help` and `tutti run --help`.
const char* usage();
const char* run_usage();

// Where a rank sits among options.nodes emulated nodes of options.ranks ranks: the
// first ranks % nodes nodes hold one rank more than the others.
struct NodePlace {
  int node = 0;
  int local_rank = 0;
  int local_size = 0;
};
NodePlace node_place(int rank, int ranks, int nodes);

}  // namespace tutti::launcher
