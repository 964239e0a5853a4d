#include "runtime/rendezvous/slurm_node.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/store/socket_address.h"

extern char** environ;

namespace tutti::rendezvous {
namespace {

constexpr int64_t kScontrolMs = 10000;

struct Output {
  std::string text;  // stdout and stderr together
  std::string why;   // "" when scontrol ran and exited 0
};

// Runs `scontrol show WHAT -o ARGUMENT`, reading what it prints until it exits or the
// deadline passes; then it is killed, by its PID, and reaped.
Output run_scontrol(const char* what, const std::string& argument, Deadline deadline) {
  Output out;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    out.why = concat("pipe: ", std::strerror(errno));
    return out;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  const char* argv[] = {"scontrol", "show", what, "-o", argument.c_str(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, "scontrol", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    out.why = concat("scontrol cannot be run (", std::strerror(rc), ")");
    return out;
  }
  char buffer[4096];
  bool timed_out = false;
  for (;;) {
    pollfd ready{pipe_fds[0], POLLIN, 0};
    int waited = ::poll(&ready, 1, static_cast<int>(std::max<int64_t>(deadline.remaining_ms(), 0)));
    if (waited < 0 && errno == EINTR) continue;
    if (waited == 0) {
      timed_out = true;
      break;
    }
    ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.text.append(buffer, static_cast<size_t>(got));
  }
  ::close(pipe_fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    out.why = "scontrol did not answer in time";
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string said = out.text.substr(0, out.text.find('\n'));
    out.why = concat("scontrol failed", said.empty() ? "" : concat(": ", said));
  }
  return out;
}

// The value of field `name` in one line of `scontrol show ... -o` output, whose fields
// are " Name=value" with values without spaces; "" when absent.
std::string field(const std::string& line, const std::string& name) {
  const std::string needle = name + "=";
  size_t at = line.find(needle);
  while (at != std::string::npos && at > 0 && line[at - 1] != ' ' && line[at - 1] != '\n') {
    at = line.find(needle, at + 1);
  }
  if (at == std::string::npos) return "";
  at += needle.size();
  size_t end = line.find_first_of(" \n", at);
  return line.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

std::string node_addr_field(const std::string& scontrol_output) { return field(scontrol_output, "NodeAddr"); }

std::vector<SlurmStep> parse_slurm_steps(const std::string& scontrol_output) {
  std::vector<SlurmStep> steps;
  size_t start = 0;
  while (start < scontrol_output.size()) {
    size_t end = scontrol_output.find('\n', start);
    const std::string line = scontrol_output.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? scontrol_output.size() : end + 1;
    // "StepId=12.0"; the batch and extern steps ("12.batch") run no ranks.
    const std::string id = field(line, "StepId");
    const size_t dot = id.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == id.size()) continue;
    if (id.find_first_not_of("0123456789", dot + 1) != std::string::npos) continue;
    if (id.find_first_not_of("0123456789") != dot) continue;
    const std::string state = field(line, "State");
    if (!state.empty() && state != "RUNNING") continue;
    SlurmStep step;
    step.job = std::stol(id.substr(0, dot));
    step.step = std::stol(id.substr(dot + 1));
    step.nodes = field(line, "NodeList");
    if (!step.nodes.empty()) steps.push_back(std::move(step));
  }
  return steps;
}

std::vector<SlurmStep> slurm_steps(const std::string& which, Deadline deadline) {
  Output out = run_scontrol("step", which, Deadline::after_ms(std::min(deadline.remaining_ms(), kScontrolMs)));
  if (!out.why.empty()) fail(Status::kInvalidArgument, concat("`scontrol show step -o ", which, "`: ", out.why));
  return parse_slurm_steps(out.text);
}

std::string slurm_node_address(const std::string& node, Deadline deadline) {
  sockaddr_storage address{};
  std::string why = store::resolve_socket_address(node, 0, /*passive=*/false, &address);
  if (why.empty()) return node;
  Output out = run_scontrol("node", node, Deadline::after_ms(std::min(deadline.remaining_ms(), kScontrolMs)));
  std::string found = out.why.empty() ? node_addr_field(out.text) : "";
  if (found.empty()) {
    fail(Status::kInvalidArgument,
         concat("tutti_comm_init: the store's host, Slurm node ", node, " (first of the step's node list), ", why,
                ", and `scontrol show node ", node, "` gave no NodeAddr (",
                out.why.empty() ? "no NodeAddr field" : out.why,
                "); make the node names resolve, or set TUTTI_ADDR to the first node's host:port"));
  }
  return found;
}

}  // namespace tutti::rendezvous
