#include "observe/top.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "observe/job_file.h"
#include "observe/top_view.h"
#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/error.h"
#include "runtime/common/wall_clock.h"
#include "runtime/loop/loop.h"
#include "runtime/rendezvous/host_port.h"
#include "runtime/rendezvous/hostlist.h"
#include "runtime/rendezvous/launch_env.h"
#include "runtime/rendezvous/slurm_node.h"
#include "runtime/store/client.h"

namespace tutti::observe {
namespace {

constexpr int kExitUsage = 2;
constexpr int64_t kConnectMs = 3000;
constexpr int64_t kRequestMs = 3000;

constexpr const char* kUsage =
    "usage: tutti top [--job PID | --store HOST:PORT | --slurm JOB[.STEP]] [--once] [--interval SECONDS]\n"
    "\n"
    "Shows every rank of a running job: the communicators, what each rank is doing\n"
    "(its collective and sequence number, or the send or receive it is blocked in) and\n"
    "for how long, when the store last heard from it, the ranks declared lost and why,\n"
    "and which ranks the others wait for. Redrawn every second until the job ends.\n"
    "\n"
    "  --job PID          the job started by the tutti launch whose pid is PID; needed\n"
    "                     only when this user runs several (tutti top lists them)\n"
    "  --store HOST:PORT  the job whose rendezvous store is at HOST:PORT (srun, mpirun,\n"
    "                     or any job not started by tutti launch), with its secret in\n"
    "                     TUTTI_SECRET\n"
    "  --slurm JOB[.STEP] the srun step's job, its store found as its ranks found it (the\n"
    "                     step's first node, the port derived from the ids, or TUTTI_PORT),\n"
    "                     with its secret in TUTTI_SECRET; JOB alone when it runs one step\n"
    "  --once             draw once and exit, for scripts\n"
    "  --interval S       seconds between redraws (default 1)\n"
    "\n"
    "Without --job, --store or --slurm, inside a job (TUTTI_ADDR is set) it shows that\n"
    "job, and elsewhere the one job this user runs with tutti launch.\n";

struct Target {
  std::string title;
  std::string address;
  std::string secret;
};

struct Options {
  pid_t job = 0;
  std::string store;
  std::string slurm;  // "JOB" or "JOB.STEP"
  bool once = false;
  double interval_s = 1.0;
};

int usage_error(const std::string& what) {
  std::fprintf(stderr, "tutti top: %s\n%s", what.c_str(), kUsage);
  return kExitUsage;
}

std::optional<Options> parse(std::span<const std::string> args, int* status) {
  Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      *status = 0;
      return std::nullopt;
    } else if (arg == "--once") {
      options.once = true;
    } else if (arg == "--job") {
      const std::string* pid = value();
      char* end = nullptr;
      long number = pid ? std::strtol(pid->c_str(), &end, 10) : 0;
      if (!pid || *end != '\0' || number <= 0) {
        *status = usage_error("--job needs the pid of a tutti launch (tutti top lists them)");
        return std::nullopt;
      }
      options.job = static_cast<pid_t>(number);
    } else if (arg == "--store") {
      const std::string* address = value();
      if (!address) {
        *status = usage_error("--store needs HOST:PORT, the job's rendezvous store (its TUTTI_ADDR)");
        return std::nullopt;
      }
      options.store = *address;
    } else if (arg == "--slurm") {
      const std::string* which = value();
      if (!which || which->empty() || which->find_first_not_of("0123456789.") != std::string::npos ||
          which->front() == '.' || which->back() == '.' || std::count(which->begin(), which->end(), '.') > 1) {
        *status =
            usage_error("--slurm needs JOB or JOB.STEP, the srun step's ids (squeue or scontrol show step lists them)");
        return std::nullopt;
      }
      options.slurm = *which;
    } else if (arg == "--interval") {
      const std::string* seconds = value();
      char* end = nullptr;
      options.interval_s = seconds ? std::strtod(seconds->c_str(), &end) : 0;
      if (!seconds || *end != '\0' || !(options.interval_s >= 0.1 && options.interval_s <= 3600)) {
        *status = usage_error("--interval needs a number of seconds from 0.1 to 3600");
        return std::nullopt;
      }
    } else {
      *status = usage_error(concat("unknown argument \"", arg, "\""));
      return std::nullopt;
    }
  }
  if ((options.job != 0) + !options.store.empty() + !options.slurm.empty() > 1) {
    *status = usage_error("give one of --job, --store and --slurm");
    return std::nullopt;
  }
  return options;
}

std::string describe_job(const JobFile& job) {
  int64_t age_ms = wall_clock_ms() - job.started_ms;
  return concat("tutti launch pid ", job.launcher_pid, ": ", job.ranks, job.ranks == 1 ? " rank" : " ranks", " of ",
                job.command, ", for ", duration_text(age_ms));
}

// The store of srun step `which` ("JOB" or "JOB.STEP"), where its ranks found it
// (rendezvous/launch_env.h): the step's first node, at TUTTI_PORT if this process has
// it, else at the port derived from the ids. nullopt after saying why there is none.
std::optional<Target> find_slurm_step(const std::string& which, const std::string& secret) {
  const auto deadline = Deadline::after_ms(kConnectMs);
  try {
    std::vector<rendezvous::SlurmStep> steps = rendezvous::slurm_steps(which, deadline);
    if (steps.size() != 1) {
      std::string list;
      for (const auto& step : steps) list += concat("  ", step.job, ".", step.step, " on ", step.nodes, "\n");
      std::fprintf(stderr,
                   steps.empty() ? "tutti top: Slurm lists no running step of %s\n%s"
                                 : "tutti top: job %s runs several steps; choose one with --slurm JOB.STEP:\n%s",
                   which.c_str(), list.c_str());
      return std::nullopt;
    }
    const rendezvous::SlurmStep& step = steps[0];
    std::string host = rendezvous::slurm_node_address(rendezvous::first_host(step.nodes), deadline);
    int port = rendezvous::slurm_step_port(step.job, step.step);
    if (const char* given = std::getenv("TUTTI_PORT")) {
      std::optional<uint16_t> parsed = rendezvous::parse_port(given);
      if (!parsed) {
        std::fprintf(stderr, "tutti top: TUTTI_PORT=\"%s\" is not a port in 1..65535; unset it or fix it\n", given);
        return std::nullopt;
      }
      port = *parsed;
    }
    return Target{concat("Slurm step ", step.job, ".", step.step, " on ", step.nodes, " (store ", host, ":", port, ")"),
                  concat(host, ":", port), secret};
  } catch (const Error& error) {
    std::fprintf(stderr, "tutti top: cannot find the store of Slurm step %s: %s\n", which.c_str(), error.what());
    return std::nullopt;
  }
}

// The job to show, or nullopt after saying why there is none.
std::optional<Target> find_target(const Options& options) {
  const char* secret = std::getenv("TUTTI_SECRET");
  if (!options.store.empty())
    return Target{concat("job with store ", options.store), options.store, secret ? secret : ""};
  if (!options.slurm.empty()) return find_slurm_step(options.slurm, secret ? secret : "");
  const char* inside = std::getenv("TUTTI_ADDR");
  if (options.job == 0 && inside != nullptr && *inside != '\0') {
    return Target{concat("this job (store ", inside, ")"), inside, secret ? secret : ""};
  }
  std::vector<JobFile> jobs = running_jobs();
  if (options.job != 0) {
    for (const auto& job : jobs) {
      if (job.launcher_pid == options.job) return Target{describe_job(job), job.store_address, job.secret};
    }
    std::fprintf(stderr,
                 "tutti top: no tutti launch of this user runs with pid %d (it ended, or it is another user's; "
                 "its job files are in %s)\n",
                 static_cast<int>(options.job), jobs_folder().c_str());
    return std::nullopt;
  }
  if (jobs.size() == 1) return Target{describe_job(jobs[0]), jobs[0].store_address, jobs[0].secret};
  if (jobs.empty()) {
    std::fprintf(stderr,
                 "tutti top: no job of this user started by tutti launch is running; for a job started by srun, "
                 "give its step: tutti top --slurm JOB[.STEP], and for one started by mpirun, its store: tutti top "
                 "--store HOST:PORT, with TUTTI_SECRET set\n");
  } else {
    std::string list;
    for (const auto& job : jobs) list += concat("  ", describe_job(job), "\n");
    std::fprintf(stderr, "tutti top: %zu jobs are running; choose one with --job PID:\n%s", jobs.size(), list.c_str());
  }
  return std::nullopt;
}

// Ranks behind a relay (store/relay.h): the store lists them under the relay, with the
// relay's silence and no activity, since their heartbeats stop at the relay. What each
// reports doing reaches the store as its activity key, which the relay writes when it
// changes: that fills in their doing, and so who waits for whom.
void read_relayed_activity(store::Client& store, GroupState* group, Deadline deadline) {
  std::vector<store::RosterEntry*> relayed;
  std::vector<std::string> keys;
  for (auto& member : group->members) {
    if (!member.activity.empty() || member.identity.rfind("relay ", 0) != 0) continue;
    relayed.push_back(&member);
    keys.push_back(store::activity_key(group->prefix, member.rank));
  }
  if (keys.empty()) return;
  std::vector<bool> written = store.check(keys, deadline);
  std::vector<std::string> present;
  std::vector<store::RosterEntry*> reported;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!written[i]) continue;
    present.push_back(keys[i]);
    reported.push_back(relayed[i]);
  }
  if (present.empty()) return;
  std::vector<std::string> values = store.multi_get(present, deadline);
  for (size_t i = 0; i < values.size() && i < reported.size(); ++i) reported[i]->activity = values[i];
}

std::map<std::string, GroupState> read_groups(store::Client& store) {
  std::map<std::string, GroupState> groups;
  for (const auto& line : store.roster("", Deadline::after_ms(kRequestMs))) {
    auto entry = store::decode_roster_entry(line);
    if (!entry) continue;
    GroupState& group = groups[entry->prefix];
    group.prefix = entry->prefix;
    group.members.push_back(std::move(*entry));
  }
  for (auto& [prefix, group] : groups) {
    auto deadline = Deadline::after_ms(kRequestMs);
    read_relayed_activity(store, &group, deadline);
    const std::string size_key = prefix + "world_size";
    const std::string count_key = store::lost_count_key(prefix);
    std::vector<bool> present = store.check({size_key, count_key}, deadline);
    if (present[0]) group.size = std::atoi(store.get(size_key, deadline).c_str());
    if (!present[1]) continue;
    int64_t count = std::atoll(store.get(count_key, deadline).c_str());
    std::vector<std::string> keys;
    for (int64_t n = 1; n <= count; ++n) keys.push_back(store::lost_key(prefix, n));
    std::vector<bool> written = store.check(keys, deadline);
    std::erase_if(keys, [&, i = size_t{0}](const std::string&) mutable { return !written[i++]; });
    for (const auto& value : store.multi_get(keys, deadline)) {
      if (auto event = store::decode_loss_event(value)) group.lost[event->rank] = *event;
    }
  }
  return groups;
}

}  // namespace

int top_main(std::span<const std::string> args) {
  int status = 0;
  std::optional<Options> options = parse(args, &status);
  if (!options) return status;
  std::optional<Target> target = find_target(*options);
  if (!target) return 1;
  std::string host, port_text;
  auto port = rendezvous::split_host_port(target->address, &host, &port_text) ? rendezvous::parse_port(port_text)
                                                                              : std::nullopt;
  if (!port) return usage_error(concat("\"", target->address, "\" is not HOST:PORT"));

  auto loop = loop::Loop::create();
  std::unique_ptr<store::Client> store;
  try {
    store = store::Client::connect(loop, host, *port, Deadline::after_ms(kConnectMs), target->secret);
  } catch (const Error& error) {
    if (error.status() == Status::kDenied) {
      std::fprintf(stderr, "tutti top: the job's store at %s turned us away: %s; set TUTTI_SECRET to the job's\n",
                   target->address.c_str(), error.what());
    } else {
      std::fprintf(stderr, "tutti top: cannot reach the job's store at %s (has the job ended?): %s\n",
                   target->address.c_str(), error.what());
    }
    return 1;
  }
  const bool color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  for (bool first = true;; first = false) {
    JobState job;
    job.title = target->title;
    try {
      for (auto& [prefix, group] : read_groups(*store)) job.groups.push_back(std::move(group));
    } catch (const Error& error) {
      if (first) {
        std::fprintf(stderr, "tutti top: the job's store at %s does not answer: %s\n", target->address.c_str(),
                     error.what());
        return 1;
      }
      std::printf("tutti top: the job has ended (its store at %s went away)\n", target->address.c_str());
      return 0;
    }
    job.now_ms = wall_clock_ms();
    std::string view = draw(job, color);
    if (!options->once && isatty(STDOUT_FILENO)) view = "\033[H\033[2J" + view;
    std::fwrite(view.data(), 1, view.size(), stdout);
    std::fflush(stdout);
    if (options->once) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(options->interval_s * 1000)));
  }
}

}  // namespace tutti::observe
