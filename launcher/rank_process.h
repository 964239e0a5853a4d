// One rank of a local job: the child process, started with clone and exec, and the two
// pipes its stdout and stderr come back through. All of it runs on the launcher's main
// thread and its uv loop.
//
// Why clone and exec rather than uv_spawn or posix_spawn: the child must set
// PR_SET_PDEATHSIG before exec, so that ranks die with a SIGKILLed launcher, and neither
// has a hook for it. The death signal fires when the starting *thread* exits, so ranks
// are started from the main thread, which lives until the launcher exits. The ranks'
// own children are covered by orphan_guard.h.
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <uv.h>

#include <functional>
#include <string>
#include <vector>

#include "launcher/line_prefixer.h"
#include "launcher/output_writer.h"

namespace tutti::launcher {

// What every start needs, prepared once, so that the child runs only async-signal-safe
// calls between clone and exec (the launcher has threads: the store's loop runs on one).
struct ExecPlan {
  std::string path;  // resolved, for execve
  std::vector<std::string> argv;
  std::vector<std::string> env;    // NAME=value shared by every rank
  sigset_t child_mask;             // the signal mask the launcher started with
  std::vector<int> reset_signals;  // set to SIG_DFL in the child: those the launcher handles
  struct rlimit child_nofile;      // RLIMIT_NOFILE as the launcher found it
  int stdin_fd = -1;               // /dev/null
  pid_t launcher_pid = 0;
  std::vector<int> cpus;  // --bind cpu: the CPUs the ranks take in turn; empty: no binding
};

// "exited with code 3", "was killed by signal 9 (SIGKILL)".
std::string describe_wait_status(int wait_status);
// The exit code a shell would report for it: the code, or 128 + the signal.
int shell_exit_code(int wait_status);
// "SIGKILL" for 9.
std::string signal_name(int sig);

class RankProcess {
 public:
  using OutputClosed = std::function<void(RankProcess&)>;

  // restart: 0 for the rank's first process, K for its K-th restart (--restart), whose
  // lines are tagged "[RANK+K] ".
  RankProcess(uv_loop_t* loop, int rank, int restart, bool tag_output, OutputWriter& out, OutputWriter& err,
              OutputClosed on_output_closed);
  // The pipes must have been closed (output_open() false) and the loop run since.
  ~RankProcess() = default;
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  // Starts the rank in a process group of its own, with plan.env plus rank_env, on CPU
  // `cpu` alone unless it is -1, and returns once exec has happened.
  // Returns "" on success, else what failed (clone, pipe, the binding or exec, with the
  // reason); nothing is left running then.
  // on_terminal: the rank keeps the launcher's stdin, stdout, stderr and process group
  // instead (--interactive's rank 0), so that it can read the terminal, which stops
  // readers outside its foreground group, and no pipes are opened.
  std::string start(const ExecPlan& plan, const std::vector<std::string>& rank_env, int cpu = -1,
                    bool on_terminal = false);

  // Sends sig to the rank's process group (its own children too), or to the rank
  // alone when it has left that group. Nothing once it has been reaped.
  void signal(int sig);
  // After the rank was reaped: SIGKILLs what is left of its process group (children
  // that outlived it and may hold its output pipes open).
  void kill_leftovers();
  void record_exit(int wait_status);

  // Stops reading: passes on a partial last line and closes both pipes.
  void close_output();

  int rank() const { return rank_; }
  // "rank 3", or "rank 3 (restart 1)", for messages.
  std::string label() const;
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !reaped_; }
  bool reaped() const { return reaped_; }
  int wait_status() const { return wait_status_; }
  bool output_open() const { return open_pipes_ > 0; }

 private:
  struct Stream {
    RankProcess* owner = nullptr;
    uv_pipe_t pipe;
    LinePrefixer prefixer;
    bool open = false;  // uv_close not called yet
    Stream(RankProcess* owner_in, std::string prefix, OutputWriter& writer);
  };

  void open_stream(Stream& stream, int fd);
  void end_stream(Stream& stream);
  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* pipe, ssize_t nread, const uv_buf_t* buf);
  static void on_close(uv_handle_t* handle);

  uv_loop_t* loop_;
  int rank_;
  int restart_;
  OutputClosed on_output_closed_;
  Stream out_;
  Stream err_;
  int open_pipes_ = 0;  // pipes whose close callback has not run yet
  pid_t pid_ = 0;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace tutti::launcher
