#include "launcher/rank_process.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "runtime/common/concat.h"

namespace tutti::launcher {
namespace {

// The loop consumes each read before the next, so one buffer serves every pipe; a
// buffer per pipe would cost 512 MiB at 4096 ranks.
char read_buffer[64 * 1024];

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// What exec_child writes to the status pipe when a step fails: the step and errno.
enum class ChildStep : int { kRedirect, kBind, kExec };
struct ChildFailure {
  ChildStep step;
  int error;
};

[[noreturn]] void fail_child(int status_fd, ChildStep step) {
  ChildFailure failure{step, errno};
  ssize_t ignored = write(status_fd, &failure, sizeof failure);
  (void)ignored;
  _exit(127);
}

// Runs in the child between clone and exec, on the launcher's memory: async-signal-safe
// calls only (no malloc, no locks), since another thread of the launcher may hold any
// lock.
// out_fd and err_fd are -1 for a rank on the launcher's terminal.
[[noreturn]] void exec_child(const ExecPlan& plan, char* const* argv, char* const* envp, int out_fd, int err_fd,
                             int status_fd, int cpu) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher may have died before prctl took hold; then nobody would kill us.
  if (getppid() != plan.launcher_pid) _exit(127);
  bool on_terminal = out_fd < 0;
  // A group of its own: a terminal's Ctrl-C then reaches the launcher alone, which
  // passes it on once, and stopping a rank can take its children with it.
  if (!on_terminal) setpgid(0, 0);
  if (!on_terminal &&
      (dup2(plan.stdin_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0)) {
    fail_child(status_fd, ChildStep::kRedirect);
  }
  if (cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) fail_child(status_fd, ChildStep::kBind);
  }
  // Everything else the launcher holds is O_CLOEXEC, so exec closes it.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  for (int sig : plan.reset_signals) sigaction(sig, &default_action, nullptr);
  setrlimit(RLIMIT_NOFILE, &plan.child_nofile);
  sigprocmask(SIG_SETMASK, &plan.child_mask, nullptr);
  execve(plan.path.c_str(), argv, envp);
  fail_child(status_fd, ChildStep::kExec);
}

// exec_child's arguments, through clone's one pointer.
struct ChildStart {
  const ExecPlan* plan;
  char* const* argv;
  char* const* envp;
  int out_fd;
  int err_fd;
  int status_fd;
  int cpu;
};

int start_child(void* start) {
  const ChildStart& c = *static_cast<const ChildStart*>(start);
  exec_child(*c.plan, c.argv, c.envp, c.out_fd, c.err_fd, c.status_fd, c.cpu);
}

// exec_child's stack, used only until the child execs or exits, while the launcher
// waits (CLONE_VFORK). It needs little: a few system calls deep.
constexpr size_t kChildStackBytes = 64 * 1024;

// "[3] ", or "[3+1] " for rank 3's first restart.
std::string output_tag(int rank, int restart) {
  return restart == 0 ? concat("[", rank, "] ") : concat("[", rank, "+", restart, "] ");
}

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? concat("SIG", abbrev) : concat("signal ", sig);
}

std::string describe_wait_status(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return concat("was killed by signal ", sig, " (", signal_name(sig), WCOREDUMP(wait_status) ? ", core dumped" : "",
                  ")");
  }
  return concat("exited with code ", WEXITSTATUS(wait_status));
}

int shell_exit_code(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return WEXITSTATUS(wait_status);
}

RankProcess::Stream::Stream(RankProcess* owner_in, std::string prefix, OutputWriter& writer)
    : owner(owner_in), prefixer(std::move(prefix), [&writer](std::string_view lines) { writer.write(lines); }) {}

RankProcess::RankProcess(uv_loop_t* loop, int rank, int restart, bool tag_output, OutputWriter& out, OutputWriter& err,
                         OutputClosed on_output_closed)
    : loop_(loop),
      rank_(rank),
      restart_(restart),
      on_output_closed_(std::move(on_output_closed)),
      out_(this, tag_output ? output_tag(rank, restart) : std::string(), out),
      err_(this, tag_output ? output_tag(rank, restart) : std::string(), err) {}

std::string RankProcess::label() const {
  return restart_ == 0 ? concat("rank ", rank_) : concat("rank ", rank_, " (restart ", restart_, ")");
}

std::string RankProcess::start(const ExecPlan& plan, const std::vector<std::string>& rank_env, int cpu,
                               bool on_terminal) {
  // Everything the child touches is built here, before clone.
  std::vector<char*> argv;
  for (const auto& arg : plan.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& entry : plan.env) envp.push_back(const_cast<char*>(entry.c_str()));
  for (const auto& entry : rank_env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int status_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &status_pipe[0], &status_pipe[1]}) {
      close_fd(*fd);
    }
  };
  bool pipes_made = on_terminal || (pipe2(out_pipe, O_CLOEXEC) == 0 && pipe2(err_pipe, O_CLOEXEC) == 0);
  if (!pipes_made || pipe2(status_pipe, O_CLOEXEC) != 0) {
    std::string reason = concat("pipe: ", std::strerror(errno));
    close_all();
    return reason;
  }

  // Signals stay blocked across clone, so that none reaches the launcher's handlers in
  // the child before exec_child has reset them (libuv's handlers would tell the
  // launcher's loop about a signal the child got).
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  // The child shares the launcher's memory until it execs (CLONE_VM), as posix_spawn's
  // does, and the launcher waits for that (CLONE_VFORK): a fork would copy the page
  // tables of the launcher's whole address space, then tear them down at exec, and
  // leave the launcher's own pages copy-on-write, each first write after it a page fault
  // and a TLB flush. Where those are costly (a VM whose page-table updates trap to its
  // hypervisor), `tutti launch -n 512 /bin/true` took 3.3 s with fork, 1.5 s with
  // clone. The child writes nothing of the launcher's but its own stack and errno,
  // which the launcher does not read unless clone failed.
  std::unique_ptr<char[]> child_stack(new char[kChildStackBytes]);
  ChildStart child{&plan, argv.data(), envp.data(), out_pipe[1], err_pipe[1], status_pipe[1], cpu};
  pid_t pid = clone(start_child, child_stack.get() + kChildStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
  int clone_error = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) {
    close_all();
    return concat("clone: ", std::strerror(clone_error));
  }
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(status_pipe[1]);

  // The status pipe closes at exec (O_CLOEXEC) or carries the step that failed.
  ChildFailure failure{};
  size_t got = 0;
  while (got < sizeof failure) {
    ssize_t n = read(status_pipe[0], reinterpret_cast<char*>(&failure) + got, sizeof failure - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close_fd(status_pipe[0]);
  if (got == sizeof failure) {
    int ignored;
    while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    close_all();
    const char* reason = std::strerror(failure.error);
    switch (failure.step) {
      case ChildStep::kRedirect: return concat("redirecting its stdin, stdout and stderr (dup2): ", reason);
      case ChildStep::kBind: return concat("binding it to CPU ", cpu, " (sched_setaffinity, --bind cpu): ", reason);
      case ChildStep::kExec: break;
    }
    return concat("execve ", plan.path, ": ", reason);
  }

  pid_ = pid;
  if (!on_terminal) {
    open_stream(out_, out_pipe[0]);
    open_stream(err_, err_pipe[0]);
  }
  return "";
}

void RankProcess::open_stream(Stream& stream, int fd) {
  uv_pipe_init(loop_, &stream.pipe, 0);
  stream.pipe.data = &stream;
  ++open_pipes_;
  stream.open = true;
  int rc = uv_pipe_open(&stream.pipe, fd);
  if (rc != 0) close(fd);  // otherwise the handle owns it, and uv_close closes it
  if (rc == 0) rc = uv_read_start(reinterpret_cast<uv_stream_t*>(&stream.pipe), &on_alloc, &on_read);
  if (rc != 0) {
    // Cannot happen for a fresh pipe short of running out of memory; the rank then
    // runs with this stream unread, and its writes to it fail with EPIPE.
    end_stream(stream);
  }
}

void RankProcess::end_stream(Stream& stream) {
  if (!stream.open) return;
  stream.open = false;
  stream.prefixer.finish();
  uv_close(reinterpret_cast<uv_handle_t*>(&stream.pipe), &on_close);
}

void RankProcess::on_alloc(uv_handle_t*, size_t, uv_buf_t* buf) { *buf = uv_buf_init(read_buffer, sizeof read_buffer); }

void RankProcess::on_read(uv_stream_t* pipe, ssize_t nread, const uv_buf_t* buf) {
  auto* stream = static_cast<Stream*>(pipe->data);
  if (nread > 0) {
    stream->prefixer.feed(std::string_view(buf->base, static_cast<size_t>(nread)));
  } else if (nread < 0) {
    // UV_EOF once every writer (the rank and whatever it started) has closed it.
    stream->owner->end_stream(*stream);
  }
}

void RankProcess::on_close(uv_handle_t* handle) {
  auto* stream = static_cast<Stream*>(handle->data);
  RankProcess* self = stream->owner;
  if (--self->open_pipes_ == 0 && self->on_output_closed_) self->on_output_closed_(*self);
}

void RankProcess::signal(int sig) {
  if (!running()) return;
  // The rank leads its own group unless it moved itself elsewhere (setsid, setpgid).
  if (getpgid(pid_) == pid_) {
    kill(-pid_, sig);
  } else {
    kill(pid_, sig);
  }
}

void RankProcess::kill_leftovers() {
  // Once the rank is reaped its pid may be reused, but not as a group id while the
  // group still has members; with no members left this fails with ESRCH.
  if (reaped_) kill(-pid_, SIGKILL);
}

void RankProcess::record_exit(int wait_status) {
  reaped_ = true;
  wait_status_ = wait_status;
}

void RankProcess::close_output() {
  end_stream(out_);
  end_stream(err_);
}

}  // namespace tutti::launcher
