#include "launcher/launcher.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "launcher/orphan_guard.h"
#include "launcher/rank_list.h"
#include "launcher/rank_process.h"
#include "launcher/torch_port.h"
#include "observe/job_file.h"
#include "observe/trace_merge.h"
#include "runtime/common/concat.h"
#include "runtime/common/cpus.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/log.h"
#include "runtime/common/settings.h"
#include "runtime/common/wall_clock.h"
#include "runtime/loop/loop.h"
#include "runtime/store/auth.h"
#include "runtime/store/server.h"
#include "runtime/transport/shm/segment.h"

extern char** environ;

namespace tutti::launcher {
namespace {

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};
// How long ranks get between the signal that asks them to stop and SIGKILL.
constexpr uint64_t kGraceMs = 3000;
// How long output may keep flowing after the last rank was reaped and the leftovers
// of its process group were killed (something outside the group may hold a pipe).
constexpr uint64_t kDrainMs = 1000;
constexpr int kExitUsage = 2;
constexpr int kExitTimeout = 124;
constexpr int kExitCannotStart = 127;
// Spawning 4096 ranks takes a while; let signals and exits be handled in between.
constexpr int kSpawnsBetweenPolls = 32;
constexpr const char* kStoreHost = "127.0.0.1";

// The variables tutti launch sets; inherited values are dropped rather than doubled
// (TUTTI_SECRET is passed on as it was when the user set one).
// torch's env:// variables are set too, so that torch.distributed scripts (gloo, nccl,
// or backend "tutti") run under tutti launch as under torchrun.
constexpr const char* kOwnVariables[] = {
    "TUTTI_RANK",  "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK",   "TUTTI_LOCAL_SIZE",   "TUTTI_NODE_RANK",
    "TUTTI_ADDR",  "TUTTI_HOST",       "TUTTI_LAUNCHER_PID", "TUTTI_STORE_SERVER", "TUTTI_SECRET",
    "RANK",        "WORLD_SIZE",       "LOCAL_RANK",         "LOCAL_WORLD_SIZE",   "GROUP_RANK",
    "MASTER_ADDR", "MASTER_PORT",      "TUTTI_JOIN",         "TUTTI_RESTART"};

// The launcher's own messages: one write each, "tutti launch: " first, always shown
// (TUTTI_LOG_LEVEL gates only the info-level ones, through log::enabled).
void say(const std::string& message) {
  std::string line = concat("tutti launch: ", message, "\n");
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

void say_info(const std::string& message) {
  if (log::enabled(log::Level::kInfo)) say(message);
}

// pipe2 could otherwise hand out 0, 1 or 2 when the launcher was started with one
// closed, and a rank's stdout would then be read as the launcher's.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int opened = open("/dev/null", O_RDWR);
      if (opened >= 0 && opened != fd) {
        dup2(opened, fd);
        close(opened);
      }
    }
  }
}

class Job {
 public:
  explicit Job(const LaunchOptions& options) : options_(options) {}
  int run();

 private:
  bool raise_file_limit();
  void open_loop();
  std::string publish_job_file(uint16_t port) const;
  bool prepare_trace_folder(const std::string& folder) const;
  void merge_trace(const std::string& folder) const;
  ExecPlan make_plan(uint16_t port, int stdin_fd) const;
  void spawn_all();
  // Starts rank's process (its restart-th: 0 first, then --restart's); "" or why not.
  std::string spawn(int rank, int restart);
  // --restart: starts a failed rank again, which joins the job through a grow; false
  // when no restart is left.
  bool restart(const RankProcess& failed, const std::string& what);
  std::vector<int> running_ranks() const;

  // --restart: a rank the store declared lost for its silence (frozen, stopped, cut
  // off) would never exit to be started again, so the launcher kills it. The store
  // says so on its own thread (on_silent_loss); the main loop kills (kill_silent_ranks).
  void on_silent_loss(const std::string& identity, const std::string& reason);
  void kill_silent_ranks();

  static void on_signal(uv_signal_t* handle, int signum);
  void reap_children();
  void on_rank_exit(RankProcess& rank);
  void on_forwarded_signal(int signum);
  void on_timeout();
  void on_grace_expired();
  void stop_ranks(int sig);
  void maybe_finish();
  void close_handles();

  const LaunchOptions& options_;
  // --interactive on a terminal: its settings before the job, put back after it, in
  // case rank 0 died while its line editor had the terminal in raw mode.
  std::optional<struct termios> terminal_;
  uv_loop_t loop_;
  uv_signal_t child_signal_;
  uv_signal_t forwarded_[std::size(kForwardedSignals)];
  uv_timer_t timeout_timer_;
  uv_timer_t grace_timer_;
  uv_timer_t drain_timer_;
  uv_async_t silent_async_;
  std::mutex silent_mutex_;
  std::vector<std::pair<std::string, std::string>> silent_;  // (identity, reason), under silent_mutex_
  bool silent_async_open_ = false;                           // under silent_mutex_
  OrphanGuard orphan_guard_;                                 // outlives the ranks: its destructor says the job ended
  OutputWriter stdout_{STDOUT_FILENO};
  OutputWriter stderr_{STDERR_FILENO};
  std::string secret_;                               // the job's: the user's TUTTI_SECRET, else a fresh one
  HeldPort torch_port_;                              // MASTER_PORT, held until the job ends
  ExecPlan plan_;                                    // how every rank is started, restarts included
  std::vector<std::unique_ptr<RankProcess>> ranks_;  // the processes started: ranks in order, then restarts
  std::vector<int> restarts_of_;                     // per rank, how many times it was started again
  int restarts_ = 0;                                 // restarts so far, of options_.restarts at most
  std::unordered_map<pid_t, RankProcess*> by_pid_;
  struct rlimit original_nofile_ = {};
  size_t reaped_ = 0;
  int exit_code_ = -1;   // the first cause of failure wins; -1: none yet
  int stop_signal_ = 0;  // what the ranks were asked to stop with; 0: not stopping
  bool spawning_ = false;
  bool draining_ = false;
  bool closing_ = false;
  std::chrono::steady_clock::time_point started_at_ = std::chrono::steady_clock::now();
};

bool Job::raise_file_limit() {
  // Per rank: two output pipes here and its connection to the store.
  rlim_t needed = static_cast<rlim_t>(options_.ranks) * 3 + 64;
  getrlimit(RLIMIT_NOFILE, &original_nofile_);
  if (original_nofile_.rlim_cur >= needed) return true;
  if (original_nofile_.rlim_max != RLIM_INFINITY && original_nofile_.rlim_max < needed) {
    say(concat("-n ", options_.ranks, " needs about ", needed, " open files but the hard limit is ",
               original_nofile_.rlim_max, " (ulimit -Hn); raise it, or start fewer ranks"));
    return false;
  }
  struct rlimit raised = original_nofile_;
  raised.rlim_cur = needed;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    say(concat("cannot raise the open-file limit to ", needed, " for -n ", options_.ranks, ": ", std::strerror(errno),
               "; raise it with ulimit -n, or start fewer ranks"));
    return false;
  }
  return true;
}

// TUTTI_TRACE names a folder the ranks write their traces to: made if need be, and
// holding one job's files at a time, so that the merge at the end holds this job only.
bool Job::prepare_trace_folder(const std::string& folder) const {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error || access(folder.c_str(), W_OK) != 0) {
    say(concat("TUTTI_TRACE: cannot write to ", folder, ": ", error ? error.message() : std::strerror(errno),
               "; the job runs untraced"));
    return false;
  }
  size_t removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (observe::is_rank_file_name(name) || name == "timeline.json")
      removed += std::filesystem::remove(entry.path(), error);
  }
  if (removed > 0) say(concat("TUTTI_TRACE: removed ", removed, " trace files of an earlier job from ", folder));
  return true;
}

void Job::merge_trace(const std::string& folder) const {
  try {
    observe::MergeReport report = observe::merge_trace_directory(folder);
    for (const auto& note : report.notes) say(concat("TUTTI_TRACE: ", note));
    say(concat("TUTTI_TRACE: the job's timeline is ", report.output.string(), " (", report.files, " rank",
               report.files == 1 ? "" : "s", "; tutti trace show or tutti trace html draw it)"));
  } catch (const std::exception& error) {
    say(concat("TUTTI_TRACE: cannot merge the ranks' traces: ", error.what()));
  }
}

// For `tutti top` (observe/job_file.h); a job that cannot be found so runs all the same.
std::string Job::publish_job_file(uint16_t port) const {
  observe::JobFile job;
  job.launcher_pid = getpid();
  job.store_address = concat(kStoreHost, ":", port);
  job.secret = secret_;
  job.ranks = options_.ranks;
  job.started_ms = wall_clock_ms();
  for (const auto& arg : options_.argv) job.command += concat(job.command.empty() ? "" : " ", arg);
  std::string why;
  std::string path = observe::write_job_file(job, &why);
  if (path.empty()) log::debug("tutti launch: tutti top will not find this job: ", why);
  return path;
}

ExecPlan Job::make_plan(uint16_t port, int stdin_fd) const {
  ExecPlan plan;
  plan.path = options_.program_path;
  plan.argv = options_.argv;
  bool user_init_method = false;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool own = false;
    for (const char* variable : kOwnVariables) own = own || name == variable;
    if (name == "TUTTI_INIT_METHOD") {
      // An empty value means unset, as settings::text reads it.
      if (text.size() <= name.size() + 1) continue;
      user_init_method = true;
    }
    if (!own) plan.env.emplace_back(text);
  }
  plan.env.push_back(concat("TUTTI_WORLD_SIZE=", options_.ranks));
  plan.env.push_back(concat("TUTTI_ADDR=", kStoreHost, ":", port));
  plan.env.push_back(concat("TUTTI_HOST=", kStoreHost));
  // The store at TUTTI_ADDR is ours: rank 0 must connect to it, not try to serve it.
  plan.env.push_back("TUTTI_STORE_SERVER=launcher");
  if (!user_init_method) plan.env.push_back("TUTTI_INIT_METHOD=env://");
  plan.env.push_back(concat("TUTTI_LAUNCHER_PID=", getpid()));
  plan.env.push_back(concat("TUTTI_SECRET=", secret_));
  plan.env.push_back(concat("WORLD_SIZE=", options_.ranks));
  plan.env.push_back(concat("MASTER_ADDR=", kStoreHost));
  if (torch_port_.port() != 0) plan.env.push_back(concat("MASTER_PORT=", torch_port_.port()));
  pthread_sigmask(SIG_SETMASK, nullptr, &plan.child_mask);
  plan.reset_signals.assign(std::begin(kForwardedSignals), std::end(kForwardedSignals));
  plan.reset_signals.push_back(SIGCHLD);
  plan.reset_signals.push_back(SIGPIPE);
  plan.child_nofile = original_nofile_;
  plan.stdin_fd = stdin_fd;
  plan.launcher_pid = getpid();
  if (options_.bind_cpu) {
    // Those of the cpuset or srun allocation the launcher was started in, not every CPU.
    plan.cpus = allowed_cpus();
    if (plan.cpus.empty())
      say(concat("--bind cpu: cannot read the CPUs this process may use (", std::strerror(errno),
                 "); the ranks run unbound"));
  }
  return plan;
}

void Job::open_loop() {
  uv_loop_init(&loop_);
  loop_.data = this;
  // SIGCHLD is watched before the first fork, so that no exit goes unnoticed.
  uv_signal_init(&loop_, &child_signal_);
  uv_signal_start(&child_signal_, &Job::on_signal, SIGCHLD);
  for (size_t i = 0; i < std::size(kForwardedSignals); ++i) {
    uv_signal_init(&loop_, &forwarded_[i]);
    uv_signal_start(&forwarded_[i], &Job::on_signal, kForwardedSignals[i]);
  }
  uv_timer_init(&loop_, &timeout_timer_);
  uv_timer_init(&loop_, &grace_timer_);
  uv_timer_init(&loop_, &drain_timer_);
  uv_async_init(&loop_, &silent_async_,
                [](uv_async_t* async) { static_cast<Job*>(async->loop->data)->kill_silent_ranks(); });
  {
    std::lock_guard<std::mutex> lock(silent_mutex_);
    silent_async_open_ = true;
  }
  if (options_.timeout_ms > 0) {
    uv_timer_start(
        &timeout_timer_, [](uv_timer_t* timer) { static_cast<Job*>(timer->loop->data)->on_timeout(); },
        static_cast<uint64_t>(options_.timeout_ms), 0);
  }
}

int Job::run() {
  ensure_standard_fds_open();
  // In the REPL every failure comes back as a statement's error, and each Ctrl-C
  // aborts a communicator, which the store would report as a lost rank: only errors
  // are logged, unless the user chose a level. The ranks inherit it, and UCX's too,
  // which it reads as it loads (it warns of the messages left unmatched in a
  // communicator destroyed after a timeout).
  if (options_.interactive) {
    setenv("TUTTI_LOG_LEVEL", "error", 0);
    setenv("UCX_LOG_LEVEL", "error", 0);
  }
  if (!raise_file_limit()) return 1;
  // Before the store's thread exists: the helper is forked from a one-thread process.
  std::string guard_failure = orphan_guard_.start();
  if (!guard_failure.empty()) {
    say(concat("cannot start the helper that cleans up after a killed launcher (", guard_failure,
               "); running without it"));
  }
  // A reader of our stdout that goes away must not kill the launcher (and, through
  // PR_SET_PDEATHSIG, the job); OutputWriter reports EPIPE instead.
  signal(SIGPIPE, SIG_IGN);

  // The store runs on a loop thread of its own; processes, pipes and signals on this
  // one, on the main thread, which forks the ranks (see rank_process.h for why).
  std::shared_ptr<loop::Loop> store_loop;
  std::unique_ptr<store::Server> server;
  try {
    // A fresh secret per job keeps strangers, and other jobs' ranks on this machine,
    // out of this job's store; ranks get it in their environment, which only this
    // user can read (/proc/PID/environ).
    secret_ = settings::text("TUTTI_SECRET").value_or("");
    if (secret_.empty()) secret_ = store::auth::random_secret_hex();
    store_loop = loop::Loop::create();
    store::ServerLimits limits;
    limits.log_losses = false;  // the ranks and the launcher say it (ServerLimits)
    if (options_.restarts > 0) {
      limits.on_silent_loss = [this](const std::string& identity, const std::string& reason) {
        on_silent_loss(identity, reason);
      };
    }
    server = store::Server::start(store_loop, kStoreHost, 0, limits, secret_);
  } catch (const std::exception& error) {
    say(concat("cannot start the rendezvous store on ", kStoreHost, ": ", error.what()));
    return 1;
  }
  uint16_t port = server->port();

  struct termios terminal;
  if (options_.interactive && tcgetattr(STDIN_FILENO, &terminal) == 0) terminal_ = terminal;
  int stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (stdin_fd < 0) {
    say(concat("cannot open /dev/null for the ranks' stdin: ", std::strerror(errno)));
    return 1;
  }
  std::string trace_folder = settings::text("TUTTI_TRACE").value_or("");
  if (!trace_folder.empty() && !prepare_trace_folder(trace_folder)) {
    unsetenv("TUTTI_TRACE");  // one warning here, rather than one per rank
    trace_folder.clear();
  }
  torch_port_ = HeldPort::for_torch_store();
  plan_ = make_plan(port, stdin_fd);
  std::string job_file = publish_job_file(port);

  open_loop();

  say_info(concat("rendezvous store on ", kStoreHost, ":", port, "; starting ", options_.ranks, " rank",
                  options_.ranks == 1 ? "" : "s", " of ", options_.program_path));
  spawn_all();
  maybe_finish();
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
  if (terminal_) tcsetattr(STDIN_FILENO, TCSANOW, &*terminal_);
  close(stdin_fd);
  ranks_.clear();
  observe::remove_job_file(job_file);
  server.reset();
  store_loop.reset();
  // A rank 0 killed while its ranks were mapping shared memory left the segment's name
  // in /dev/shm; with every rank gone, nothing of this job can need it.
  if (size_t removed = transport::shm::remove_abandoned_segments(); removed > 0) {
    say(concat("removed ", removed, " shared-memory segment", removed == 1 ? "" : "s",
               " from /dev/shm that ranks which died had left there"));
  }

  if (!trace_folder.empty()) merge_trace(trace_folder);

  int code = exit_code_ < 0 ? 0 : exit_code_;
  auto elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_at_);
  say_info(concat("job of ", options_.ranks, " rank", options_.ranks == 1 ? "" : "s", " ended after ",
                  duration_text(elapsed_ms.count()), "; exit status ", code));
  return code;
}

void Job::spawn_all() {
  spawning_ = true;
  restarts_of_.assign(static_cast<size_t>(options_.ranks), 0);
  for (int rank = 0; rank < options_.ranks && stop_signal_ == 0; ++rank) {
    std::string failure = spawn(rank, 0);
    if (!failure.empty()) {
      if (exit_code_ < 0) exit_code_ = kExitCannotStart;
      auto running = running_ranks();
      say(concat("cannot start rank ", rank, ": ", failure,
                 running.empty() ? std::string() : concat("; stopping the ", running.size(), " started before it")));
      stop_ranks(SIGTERM);
      break;
    }
    if ((rank + 1) % kSpawnsBetweenPolls == 0) uv_run(&loop_, UV_RUN_NOWAIT);
  }
  spawning_ = false;
}

std::string Job::spawn(int rank, int restart) {
  auto process = std::make_unique<RankProcess>(&loop_, rank, restart, options_.tag_output, stdout_, stderr_,
                                               [this](RankProcess&) { maybe_finish(); });
  const NodePlace place = node_place(rank, options_.ranks, options_.nodes);
  // A restarted process keeps its rank's place on the emulated nodes (its node decides
  // shared memory or UCX); its rank in the job comes from the grow it joins through.
  std::vector<std::string> rank_env = {concat("TUTTI_RANK=", rank),
                                       concat("TUTTI_LOCAL_RANK=", place.local_rank),
                                       concat("TUTTI_LOCAL_SIZE=", place.local_size),
                                       concat("TUTTI_NODE_RANK=", place.node),
                                       concat("RANK=", rank),
                                       concat("LOCAL_RANK=", place.local_rank),
                                       concat("LOCAL_WORLD_SIZE=", place.local_size),
                                       concat("GROUP_RANK=", place.node)};
  if (restart > 0) {
    rank_env.push_back("TUTTI_JOIN=1");
    rank_env.push_back(concat("TUTTI_RESTART=", restart));
  }
  bool on_terminal = options_.interactive && rank == 0 && restart == 0;
  const int cpu = plan_.cpus.empty() ? -1 : plan_.cpus[static_cast<size_t>(rank) % plan_.cpus.size()];
  std::string failure = process->start(plan_, rank_env, cpu, on_terminal);
  if (!failure.empty()) return failure;
  // A rank on the terminal leads no group of its own; PR_SET_PDEATHSIG covers it.
  if (!on_terminal) orphan_guard_.watch(process->pid());
  by_pid_[process->pid()] = process.get();
  ranks_.push_back(std::move(process));
  return "";
}

bool Job::restart(const RankProcess& failed, const std::string& what) {
  // With no rank left running, nobody would grow to admit it.
  if (restarts_ >= options_.restarts || running_ranks().empty()) return false;
  const int rank = failed.rank();
  const int again = ++restarts_of_[static_cast<size_t>(rank)];
  ++restarts_;
  std::string failure = spawn(rank, again);
  if (!failure.empty()) {
    say(concat(what, "; cannot start it again: ", failure));
    return false;
  }
  say(concat(what, "; started it again as pid ", ranks_.back()->pid(), ", which joins the job as the others grow",
             " (restart ", restarts_, " of ", options_.restarts, ")"));
  return true;
}

std::vector<int> Job::running_ranks() const {
  std::vector<int> running;
  for (const auto& rank : ranks_) {
    if (rank->running()) running.push_back(rank->rank());
  }
  return running;
}

void Job::on_silent_loss(const std::string& identity, const std::string& reason) {
  std::lock_guard<std::mutex> lock(silent_mutex_);
  if (!silent_async_open_) return;  // the job is over
  silent_.emplace_back(identity, reason);
  uv_async_send(&silent_async_);
}

void Job::kill_silent_ranks() {
  std::vector<std::pair<std::string, std::string>> losses;
  {
    std::lock_guard<std::mutex> lock(silent_mutex_);
    losses.swap(silent_);
  }
  for (const auto& [identity, reason] : losses) {
    const pid_t pid = static_cast<pid_t>(std::atol(identity.substr(identity.rfind(':') + 1).c_str()));
    auto found = by_pid_.find(pid);
    if (found == by_pid_.end() || !found->second->running() || stop_signal_ != 0 || restarts_ >= options_.restarts) {
      continue;
    }
    say(concat(found->second->label(), " (pid ", pid, ") was declared lost by the store: ", reason,
               "; killing it, so that it can be started again (--restart)"));
    found->second->signal(SIGKILL);
  }
}

void Job::on_signal(uv_signal_t* handle, int signum) {
  auto* self = static_cast<Job*>(handle->loop->data);
  if (signum == SIGCHLD) {
    self->reap_children();
  } else {
    self->on_forwarded_signal(signum);
  }
}

void Job::reap_children() {
  // SIGCHLDs coalesce, so one may stand for several exits. This process's children are
  // the ranks and the orphan guard's helper (which outlives them); the store starts none.
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) break;
    auto found = by_pid_.find(pid);
    if (found == by_pid_.end() || found->second->reaped()) continue;
    found->second->record_exit(status);
    ++reaped_;
    on_rank_exit(*found->second);
  }
  maybe_finish();
}

void Job::on_rank_exit(RankProcess& rank) {
  int status = rank.wait_status();
  bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  std::string what = concat(rank.label(), " (pid ", rank.pid(), ") ", describe_wait_status(status));
  if (!failed || stop_signal_ != 0) {
    // Ranks that end while being stopped are expected to fail; only the cause is news.
    if (log::enabled(log::Level::kDebug)) say(what);
    return;
  }
  if (restart(rank, what)) return;
  if (exit_code_ < 0) exit_code_ = shell_exit_code(status);
  size_t others = running_ranks().size();
  if (others == 0) {
    say(what);
  } else if (options_.keep_going) {
    say(concat(what, "; the other ", others == 1 ? std::string("rank goes") : concat(others, " ranks go"),
               " on (--keep-going)"));
    return;
  } else {
    say(concat(what, "; stopping the other ", others == 1 ? std::string("rank") : concat(others, " ranks")));
  }
  stop_ranks(SIGTERM);
}

void Job::on_forwarded_signal(int signum) {
  auto running = running_ranks();
  if (options_.interactive && signum == SIGINT && stop_signal_ == 0) {
    // Ctrl-C in the REPL cancels a statement, not the job. The terminal sent it to
    // rank 0 already (it shares the launcher's group); the others hear it from here.
    say_info(concat("got SIGINT; passing it on to ", format_ranks(running), " (--interactive: the job goes on)"));
    for (auto& rank : ranks_) {
      if (rank->rank() != 0) rank->signal(SIGINT);
    }
    return;
  }
  if (stop_signal_ != 0) {
    // A second request: stop waiting for a graceful end.
    if (!running.empty()) {
      say(concat("got ", signal_name(signum), " while stopping; sending SIGKILL to ", format_ranks(running)));
    }
    for (auto& rank : ranks_) rank->signal(SIGKILL);
    return;
  }
  if (exit_code_ < 0) exit_code_ = 128 + signum;
  if (running.empty()) {
    say(concat("got ", signal_name(signum), "; no rank is running any more"));
  } else {
    say(concat("got ", signal_name(signum), "; passing it on to ", format_ranks(running), " and waiting up to ",
               duration_text(kGraceMs), " for them to end"));
  }
  stop_ranks(signum);
}

void Job::on_timeout() {
  if (stop_signal_ != 0) return;
  exit_code_ = kExitTimeout;
  say(concat("--timeout ", duration_text(options_.timeout_ms), " passed with ", format_ranks(running_ranks()),
             " still running; stopping them"));
  stop_ranks(SIGTERM);
}

void Job::stop_ranks(int sig) {
  if (stop_signal_ != 0) return;
  stop_signal_ = sig;
  for (auto& rank : ranks_) rank->signal(sig);
  uv_timer_stop(&timeout_timer_);
  uv_timer_start(
      &grace_timer_, [](uv_timer_t* timer) { static_cast<Job*>(timer->loop->data)->on_grace_expired(); }, kGraceMs, 0);
}

void Job::on_grace_expired() {
  auto running = running_ranks();
  if (running.empty()) return;
  say(concat(format_ranks(running), running.size() == 1 ? " was" : " were", " still running ", duration_text(kGraceMs),
             " after ", signal_name(stop_signal_), "; sending SIGKILL"));
  for (auto& rank : ranks_) rank->signal(SIGKILL);
}

void Job::maybe_finish() {
  if (spawning_ || closing_ || reaped_ < ranks_.size()) return;
  bool output_open = false;
  for (const auto& rank : ranks_) output_open = output_open || rank->output_open();
  if (!output_open) {
    close_handles();
    return;
  }
  if (draining_) return;
  // Every rank is gone, but something still holds one of their pipes: a child left
  // behind in a rank's process group. The job is over, so it goes too; whatever holds
  // a pipe from outside the group is cut off after kDrainMs.
  draining_ = true;
  for (auto& rank : ranks_) {
    if (rank->output_open()) rank->kill_leftovers();
  }
  uv_timer_start(
      &drain_timer_,
      [](uv_timer_t* timer) {
        auto* self = static_cast<Job*>(timer->loop->data);
        for (auto& rank : self->ranks_) rank->close_output();
      },
      kDrainMs, 0);
}

void Job::close_handles() {
  closing_ = true;
  {
    std::lock_guard<std::mutex> lock(silent_mutex_);
    silent_async_open_ = false;
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&silent_async_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&child_signal_), nullptr);
  for (auto& handle : forwarded_) uv_close(reinterpret_cast<uv_handle_t*>(&handle), nullptr);
  for (uv_timer_t* timer : {&timeout_timer_, &grace_timer_, &drain_timer_}) {
    uv_close(reinterpret_cast<uv_handle_t*>(timer), nullptr);
  }
}

}  // namespace

int run_job(const LaunchOptions& options) {
  Job job(options);
  return job.run();
}

namespace {

// Whether program is this very executable, the tutti command, by inode.
bool is_this_executable(const std::string& program) {
  struct stat self;
  struct stat other;
  return stat("/proc/self/exe", &self) == 0 && stat(program.c_str(), &other) == 0 && self.st_dev == other.st_dev &&
         self.st_ino == other.st_ino;
}

// Parses, resolves the program and runs the job; command is "launch" or "run".
int parse_and_run(std::span<const std::string> args, const char* command, const char* implied_program) {
  ParseResult parsed = parse_options(args, implied_program);
  if (parsed.kind == ParseResult::Kind::kHelp) {
    fputs(implied_program ? run_usage() : usage(), stdout);
    return 0;
  }
  if (parsed.kind == ParseResult::Kind::kError) {
    std::string line = concat("tutti ", command, ": ", parsed.error, "\n");
    fputs(line.c_str(), stderr);
    return kExitUsage;
  }
  const char* path_variable = std::getenv("PATH");
  std::string error;
  auto path =
      resolve_program(parsed.options.argv[0], path_variable ? path_variable : "/usr/local/bin:/usr/bin:/bin", &error);
  if (!path) {
    say(error);
    return kExitUsage;
  }
  parsed.options.program_path = *path;
  // `tutti launch -n 4 tutti` with no script is the REPL: rank 0 needs the terminal.
  if (parsed.options.argv.size() == 1 && isatty(STDIN_FILENO) && is_this_executable(*path)) {
    parsed.options.interactive = true;
  }
  return run_job(parsed.options);
}

}  // namespace

int launch_main(std::span<const std::string> args) { return parse_and_run(args, "launch", nullptr); }

int run_main(std::span<const std::string> args) {
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) {
    say(concat("cannot find this program's own path (/proc/self/exe): ", std::strerror(errno),
               "; use tutti launch -n N /path/to/tutti instead"));
    return kExitCannotStart;
  }
  self[length] = '\0';
  return parse_and_run(args, "run", self);
}

}  // namespace tutti::launcher
