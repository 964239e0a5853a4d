// tutti-rendezvous-bench: what N ranks' init and destroy cost the rendezvous store,
// and how long they take (issue 21's table, remade with one command).
//
// Run:   build/bin/tutti-rendezvous-bench [-n RANKS] [-p PROCESSES] [-l LOOPS]
//                                         [--ranks-per-node K] [--no-secret] [--hold MS]
//                                         [--relays K [--relay-group M]] [--timeout S]
// Defaults: 1000 ranks in 16 client processes, one event loop per process, 8 ranks
// per simulated node, with a job secret. The store runs in a child process of its own,
// started as tutti launch starts it (Server::start on 127.0.0.1, port 0, default
// limits, the secret), so that its CPU time (/proc/<pid>/stat), peak memory (VmHWM)
// and descriptors (those open at start, plus its peak of connections) are its own.
// Each rank is a thread of one of the client processes, consecutive ranks in one
// process as a node's would be, running bench/simulated_rank.h's steps: the real client, meeting,
// failure detector and leave, with the transports' store traffic mirrored. The threads
// of all processes are released together once every one is up. Prints, e.g.:
//   tutti-rendezvous-bench: 1000 ranks in 16 processes (1 loop each), 8 ranks per node, secret on
//   last rank in      0.412 s after the first connect (connected and past the handshake)
//   last rank placed   0.739 s after the first connect
//   last rank ready    1.102 s after the first connect (init done: its failure detector up, its peers' cards read)
//   last rank done     1.964 s after the first connect
//   store CPU          0.59 s (user + system, from listening to the end)
//   ranks' CPU         1.71 s (the client processes, user + system, from the go to the end: on a real
//                      job, the ranks' machines)
//   store memory       peak (VmHWM) 13.3 MiB, 4.5 MiB before the ranks came: 9.08 KiB per rank
//   store fds          1012 at peak (12 at start + 1000 connections at most)
//   store traffic      31.9 requests and 3422 reply bytes per rank
//   RESULT impl=tutti n=1000 processes=16 seconds=1.964 placed_s=0.739 store_cpu_s=0.590 ...
// (the format only: those times come from a busy 2-core VM).
// The RESULT line is for scripts/bench-rendezvous-vs-torch.sh, which runs torch's
// TCPStore through bench/rendezvous_bench_torch.py the same way. The exit status is 1
// if any rank failed (the first failure is printed).
//
// --relays K puts K relays (runtime/store/relay.h) in front of the store, each in a
// process of its own as each node's would be, and a simulated node's ranks connect to
// relay (node % K): the store then serves K connections and K heartbeats a second,
// and the relays' CPU, memory and descriptors are printed beside the store's (on a
// real job, the nodes' own).
//
// --relay-group M stacks them as TUTTI_RELAY_GROUP=M does a job's: relay r stands in
// front of relay r - r % M, and only the first of every M in front of the store, which
// then serves K / M connections; the group relays are printed apart.
//
// --timeout S is each rank's init timeout (120 s by default, as TUTTI_INIT_TIMEOUT_MS's).
// The store and the relays give a connection that long to finish its handshake, not
// their default 10 s: here a rank is one of thousands of threads on two cores, and may
// wait longer than that for a core between its connect and its HELLO, which a rank on
// a machine of its own does not.
//
// It includes runtime headers, unlike the collectives' bench: the store has no C API.
#include <dirent.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/process_probe.h"
#include "bench/simulated_rank.h"
#include "runtime/loop/loop.h"
#include "runtime/store/auth.h"
#include "runtime/store/heartbeat_settings.h"
#include "runtime/store/relay.h"
#include "runtime/store/server.h"

namespace {

using tutti::bench::count_fds;
using tutti::bench::cpu_seconds;
using tutti::bench::read_all;
using tutti::bench::status_kib;
using tutti::bench::write_all;

struct Options {
  int ranks = 1000;
  int processes = 16;
  int loops = 1;
  int ranks_per_node = 8;
  bool secret = true;
  int hold_ms = 0;
  int relays = 0;
  int relay_group = 0;  // relays per group, where the first of each stands in front of the store for the others
  int timeout_s = 120;
};

// What the store's process (or a relay's) reports when it is told to stop.
struct ServerReport {
  long start_kib = 0;  // VmRSS once listening, before any rank
  int start_fds = 0;   // descriptors open then (the listener, the loop's own)
  unsigned long long peak_connections = 0;
  long hwm_kib = 0;  // VmHWM at the end
  double cpu_s = 0;  // user + system, from listening to the end
  unsigned long long requests = 0;
  unsigned long long reply_bytes = 0;
  unsigned long long keys = 0;
  unsigned long long dropped = 0;
};

// What a client process reports when its ranks are done.
struct ClientReport {
  int ranks = 0;
  int failed = 0;
  long long first_start_ns = 0;
  long long last_connected_ns = 0;
  long long last_placed_ns = 0;
  long long last_initialised_ns = 0;
  long long last_done_ns = 0;
  double cpu_s = 0;  // user + system of the whole process, from go to the end
  char first_error[1024] = {};
};

// The store's process: listens, says its port, serves until the parent closes stop_fd
// (or exits), then reports. With store_port, a relay to the store there.
[[noreturn]] void serve(const std::string& secret, int64_t handshake_timeout_ms, int report_fd, int stop_fd,
                        uint16_t store_port = 0) {
  prctl(PR_SET_NAME, store_port ? "rdv-relay" : "rdv-store");  // for perf and top; its threads inherit the name
  ServerReport report;
  uint16_t port = 0;
  try {
    auto loop = tutti::loop::Loop::create();
    std::unique_ptr<tutti::store::Server> server;
    tutti::store::ServerLimits limits;
    limits.handshake_timeout_ms = static_cast<uint64_t>(handshake_timeout_ms);
    if (store_port) {
      tutti::store::RelaySetup setup;
      setup.store_host = "127.0.0.1";
      setup.store_port = store_port;
      setup.secret = secret;
      setup.limits = limits;
      // Watched as long as its ranks are (TUTTI_HEARTBEAT_*), as a node's relay is.
      tutti::store::read_heartbeat_settings(&setup.heartbeat_interval_ms, &setup.heartbeat_timeout_ms);
      server = tutti::store::start_relay(loop, setup, tutti::Deadline::after_ms(30000));
    } else {
      server = tutti::store::Server::start(loop, "127.0.0.1", 0, limits, secret);
    }
    port = server->port();
    report.start_kib = status_kib("VmRSS");
    report.start_fds = count_fds(getpid());
    double cpu_at_start = cpu_seconds();
    write_all(report_fd, &port, sizeof(port));
    char byte;
    ssize_t ignored = read(stop_fd, &byte, 1);  // EOF when the parent is done
    (void)ignored;
    report.cpu_s = cpu_seconds() - cpu_at_start;
    auto stats = server->stats();
    report.requests = stats.requests;
    report.peak_connections = stats.peak_connections;
    report.reply_bytes = stats.reply_bytes;
    report.keys = stats.keys;
    report.dropped = stats.dropped_connections;
    report.hwm_kib = status_kib("VmHWM");
    server.reset();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-rendezvous-bench: the %s failed: %s\n", store_port ? "relay" : "store", e.what());
    write_all(report_fd, &port, sizeof(port));
    _exit(1);
  }
  write_all(report_fd, &report, sizeof(report));
  _exit(0);
}

// A client process: runs its ranks, says "ready" once their threads are up, starts
// them when go_fd closes, and reports.
[[noreturn]] void run_client(const tutti::bench::SimulatedJob& job, int first, int count, int loops, int ready_fd,
                             int go_fd, int report_fd) {
  prctl(PR_SET_NAME, "rdv-ranks");
  ClientReport report;
  double cpu_at_go = 0;
  try {
    tutti::bench::BatchOutcome outcome = tutti::bench::run_ranks(job, first, count, loops, [&] {
      char byte = 'r';
      write_all(ready_fd, &byte, 1);
      ssize_t ignored = read(go_fd, &byte, 1);  // EOF: every process is ready
      (void)ignored;
      cpu_at_go = cpu_seconds();
    });
    report.cpu_s = cpu_seconds() - cpu_at_go;
    report.ranks = outcome.ranks;
    report.failed = outcome.failed;
    report.first_start_ns = outcome.first_start_ns;
    report.last_connected_ns = outcome.last_connected_ns;
    report.last_placed_ns = outcome.last_placed_ns;
    report.last_initialised_ns = outcome.last_initialised_ns;
    report.last_done_ns = outcome.last_done_ns;
    std::snprintf(report.first_error, sizeof(report.first_error), "%s", outcome.first_error.c_str());
  } catch (const std::exception& e) {
    report.ranks = count;
    report.failed = count;
    std::snprintf(report.first_error, sizeof(report.first_error), "ranks %d-%d: %s", first, first + count - 1,
                  e.what());
    char byte = 'r';
    write_all(ready_fd, &byte, 1);  // so that the parent does not wait for it
  }
  write_all(report_fd, &report, sizeof(report));
  _exit(0);
}

int usage(const char* problem) {
  std::fprintf(stderr,
               "tutti-rendezvous-bench: %s\nusage: tutti-rendezvous-bench [-n RANKS (1000)] [-p PROCESSES (16)] "
               "[-l LOOPS per process (1)] [--ranks-per-node K (8)] [--no-secret] [--hold MS (0)] [--relays K (0)] "
               "[--relay-group M (0: none)] [--timeout S (120)]\n",
               problem);
  return 2;
}

double seconds_between(long long from_ns, long long to_ns) { return static_cast<double>(to_ns - from_ns) / 1e9; }

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--no-secret") {
      options.secret = false;
    } else if (arg == "--hold" && value) {
      options.hold_ms = std::atoi(value);
      if (options.hold_ms < 0 || options.hold_ms > 3600 * 1000) return usage("bad value for --hold");
      ++i;
    } else if (arg == "--timeout" && value) {
      options.timeout_s = std::atoi(value);
      if (options.timeout_s < 1 || options.timeout_s > 3600) return usage("bad value for --timeout");
      ++i;
    } else if (arg == "--relays" && value) {
      options.relays = std::atoi(value);
      if (options.relays < 0 || options.relays > 1000) return usage("bad value for --relays");
      ++i;
    } else if (arg == "--relay-group" && value) {
      options.relay_group = std::atoi(value);
      if (options.relay_group < 2 || options.relay_group > 1000) return usage("bad value for --relay-group");
      ++i;
    } else if ((arg == "-n" || arg == "-p" || arg == "-l" || arg == "--ranks-per-node") && value) {
      int number = std::atoi(value);
      if (number < 1 || number > 1000000) return usage(("bad value for " + arg).c_str());
      (arg == "-n"   ? options.ranks
       : arg == "-p" ? options.processes
       : arg == "-l" ? options.loops
                     : options.ranks_per_node) = number;
      ++i;
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.relay_group > 0 && options.relays == 0) return usage("--relay-group needs --relays");
  options.processes = std::min(options.processes, options.ranks);
  uint64_t file_limit = tutti::bench::raise_file_limit();  // inherited by every child

  tutti::bench::SimulatedJob job;
  job.secret = options.secret ? tutti::store::auth::random_secret_hex() : "";
  job.world_size = options.ranks;
  job.ranks_per_node = options.ranks_per_node;
  job.hold_ms = options.hold_ms;
  job.init_timeout_ms = int64_t{options.timeout_s} * 1000;
  tutti::store::read_heartbeat_settings(&job.heartbeat_interval_ms, &job.heartbeat_timeout_ms);

  // Every child is forked before this process has threads, so each is a clean
  // one-thread copy.
  int report_pipe[2];
  int stop_pipe[2];
  if (pipe(report_pipe) != 0 || pipe(stop_pipe) != 0) return usage("cannot create pipes");
  pid_t server_pid = fork();
  if (server_pid == 0) {
    close(report_pipe[0]);
    close(stop_pipe[1]);
    serve(job.secret, job.init_timeout_ms, report_pipe[1], stop_pipe[0]);
  }
  close(report_pipe[1]);
  close(stop_pipe[0]);
  if (server_pid < 0 || !read_all(report_pipe[0], &job.port, sizeof(job.port)) || job.port == 0) {
    std::fprintf(stderr, "tutti-rendezvous-bench: the store's process did not start\n");
    return 1;
  }
  // The relays, each in a process of its own, told to stop before the store: those in
  // front of other relays first, then the group relays (relay_stop[1] and
  // group_stop[1]), so that no relay loses its store while it still serves.
  std::vector<pid_t> relay_pids;
  std::vector<int> relay_report_fds;
  int relay_stop[2], group_stop[2];
  if (pipe(relay_stop) != 0 || pipe(group_stop) != 0) return usage("cannot create pipes");
  auto leads = [&](int r) { return options.relay_group > 0 && r % options.relay_group == 0; };
  for (int r = 0; r < options.relays; ++r) {
    int relay_report[2];
    if (pipe(relay_report) != 0) return usage("cannot create pipes");
    const uint16_t above =
        options.relay_group > 0 && !leads(r) ? job.relay_ports[r - r % options.relay_group] : job.port;
    pid_t pid = fork();
    if (pid == 0) {
      close(relay_report[0]);
      close(report_pipe[0]);
      close(stop_pipe[1]);  // the store's stop is the parent's alone
      close(relay_stop[1]);
      close(group_stop[1]);
      for (int fd : relay_report_fds) close(fd);
      serve(job.secret, job.init_timeout_ms, relay_report[1], leads(r) ? group_stop[0] : relay_stop[0], above);
    }
    close(relay_report[1]);
    uint16_t relay_port = 0;
    if (pid < 0 || !read_all(relay_report[0], &relay_port, sizeof(relay_port)) || relay_port == 0) {
      std::fprintf(stderr, "tutti-rendezvous-bench: relay %d's process did not start\n", r);
      return 1;
    }
    relay_pids.push_back(pid);
    relay_report_fds.push_back(relay_report[0]);
    job.relay_ports.push_back(relay_port);
  }
  close(relay_stop[0]);
  close(group_stop[0]);
  int per_process = options.ranks / options.processes;
  if (static_cast<uint64_t>(per_process) + 64 > file_limit) {
    std::fprintf(stderr, "tutti-rendezvous-bench: warning: %d ranks per process, but a process may open %llu files\n",
                 per_process + 1, static_cast<unsigned long long>(file_limit));
  }
  std::printf("tutti-rendezvous-bench: %d ranks in %d processes (%d loop%s each), %d ranks per node, secret %s\n",
              options.ranks, options.processes, options.loops, options.loops == 1 ? "" : "s", options.ranks_per_node,
              options.secret ? "on" : "off");
  std::fflush(stdout);

  int go_pipe[2];
  if (pipe(go_pipe) != 0) return usage("cannot create pipes");
  std::vector<pid_t> clients;
  std::vector<int> ready_fds, client_report_fds;
  for (int p = 0, first = 0; p < options.processes; ++p) {
    int count = per_process + (p < options.ranks % options.processes ? 1 : 0);
    int ready[2], report[2];
    if (pipe(ready) != 0 || pipe(report) != 0) return usage("cannot create pipes");
    pid_t pid = fork();
    if (pid == 0) {
      close(go_pipe[1]);
      close(ready[0]);
      close(report[0]);
      close(report_pipe[0]);
      close(stop_pipe[1]);
      close(relay_stop[1]);
      close(group_stop[1]);
      for (int fd : relay_report_fds) close(fd);
      for (int fd : ready_fds) close(fd);
      for (int fd : client_report_fds) close(fd);
      run_client(job, first, count, options.loops, ready[1], go_pipe[0], report[1]);
    }
    close(ready[1]);
    close(report[1]);
    if (pid < 0) return usage("cannot fork a client process");
    clients.push_back(pid);
    ready_fds.push_back(ready[0]);
    client_report_fds.push_back(report[0]);
    first += count;
  }
  close(go_pipe[0]);
  for (int fd : ready_fds) {
    char byte;
    read_all(fd, &byte, 1);
    close(fd);
  }
  close(go_pipe[1]);  // go

  // Until every client process reports. (The store's descriptors are not sampled
  // here: listing /proc/<pid>/fd of 10,000 entries every few ms took a tenth of the
  // machine's CPU; the store counts its own peak of connections.)
  std::vector<ClientReport> reports(clients.size());
  std::vector<size_t> received(clients.size(), 0);
  size_t open_reports = clients.size();
  while (open_reports > 0) {
    std::vector<pollfd> fds;
    std::vector<size_t> which;
    for (size_t c = 0; c < clients.size(); ++c) {
      if (client_report_fds[c] < 0) continue;
      fds.push_back(pollfd{client_report_fds[c], POLLIN, 0});
      which.push_back(c);
    }
    if (poll(fds.data(), fds.size(), -1) <= 0) continue;
    for (size_t f = 0; f < fds.size(); ++f) {
      if (fds[f].revents == 0) continue;
      size_t c = which[f];
      auto* into = reinterpret_cast<char*>(&reports[c]) + received[c];
      ssize_t n = read(client_report_fds[c], into, sizeof(ClientReport) - received[c]);
      if (n > 0) received[c] += static_cast<size_t>(n);
      if (n <= 0 || received[c] == sizeof(ClientReport)) {
        close(client_report_fds[c]);
        client_report_fds[c] = -1;
        --open_reports;
      }
    }
  }
  for (pid_t pid : clients) waitpid(pid, nullptr, 0);

  // The relays first: a relay whose ranks have all left is no loss to the store.
  close(relay_stop[1]);
  std::vector<ServerReport> relays(relay_pids.size());
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) close(group_stop[1]);
    for (size_t r = 0; r < relay_pids.size(); ++r) {
      if (leads(static_cast<int>(r)) != (pass == 1)) continue;
      int relay_status = 0;
      bool relay_reported = read_all(relay_report_fds[r], &relays[r], sizeof(ServerReport));
      waitpid(relay_pids[r], &relay_status, 0);
      if (!relay_reported || !WIFEXITED(relay_status) || WEXITSTATUS(relay_status) != 0) {
        std::fprintf(stderr, "tutti-rendezvous-bench: relay %zu's process did not report\n", r);
        return 1;
      }
    }
  }
  close(stop_pipe[1]);
  ServerReport server;
  bool reported = read_all(report_pipe[0], &server, sizeof(server));
  int status = 0;
  waitpid(server_pid, &status, 0);
  if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "tutti-rendezvous-bench: the store's process did not report\n");
    return 1;
  }

  int failed = 0;
  long long first_start = 0, last_connected = 0, last_placed = 0, last_initialised = 0, last_done = 0;
  double ranks_cpu = 0;
  std::string first_error;
  for (size_t c = 0; c < reports.size(); ++c) {
    const ClientReport& r = reports[c];
    if (received[c] != sizeof(ClientReport)) {
      failed += std::max(r.ranks, 1);
      if (first_error.empty()) first_error = "a client process died before reporting";
      continue;
    }
    failed += r.failed;
    ranks_cpu += r.cpu_s;
    if (first_error.empty() && r.first_error[0] != '\0') first_error = r.first_error;
    if (r.first_start_ns != 0 && (first_start == 0 || r.first_start_ns < first_start)) first_start = r.first_start_ns;
    last_connected = std::max(last_connected, r.last_connected_ns);
    last_placed = std::max(last_placed, r.last_placed_ns);
    last_initialised = std::max(last_initialised, r.last_initialised_ns);
    last_done = std::max(last_done, r.last_done_ns);
  }
  const double n = options.ranks;
  double connected_s = seconds_between(first_start, last_connected);
  double placed_s = seconds_between(first_start, last_placed);
  double initialised_s = seconds_between(first_start, last_initialised);
  double done_s = seconds_between(first_start, last_done);
  long long peak_fds = server.start_fds + static_cast<long long>(server.peak_connections);
  double kib_per_rank = static_cast<double>(server.hwm_kib - server.start_kib) / n;
  std::printf("last rank in      %.3f s after the first connect (connected and past the handshake)\n", connected_s);
  std::printf("last rank placed   %.3f s after the first connect\n", placed_s);
  std::printf(
      "last rank ready    %.3f s after the first connect (init done: its failure detector up, its peers' cards read)\n",
      initialised_s);
  std::printf("last rank done     %.3f s after the first connect\n", done_s);
  std::printf("store CPU          %.2f s (user + system, from listening to the end)\n", server.cpu_s);
  std::printf(
      "ranks' CPU         %.2f s (the client processes, user + system, from the go to the end: on a real\n"
      "                   job, the ranks' machines)\n",
      ranks_cpu);
  std::printf("store memory       peak (VmHWM) %.1f MiB, %.1f MiB before the ranks came: %.2f KiB per rank\n",
              server.hwm_kib / 1024.0, server.start_kib / 1024.0, kib_per_rank);
  std::printf("store fds          %lld at peak (%d at start + %llu connections at most)\n", peak_fds, server.start_fds,
              server.peak_connections);
  std::printf("store traffic      %.1f requests and %.0f reply bytes per rank\n", server.requests / n,
              server.reply_bytes / n);
  double relays_cpu = 0;
  long long relay_fds = 0;
  long relay_kib = 0;
  // The group relays, where there are any, apart: what each costs its node.
  double group_cpu = 0;
  long long group_fds = 0;
  size_t groups = 0;
  for (size_t r = 0; r < relays.size(); ++r) {
    const ServerReport& relay = relays[r];
    relays_cpu += relay.cpu_s;
    relay_fds = std::max(relay_fds, relay.start_fds + static_cast<long long>(relay.peak_connections));
    relay_kib = std::max(relay_kib, relay.hwm_kib - relay.start_kib);
    if (!leads(static_cast<int>(r))) continue;
    ++groups;
    group_cpu = std::max(group_cpu, relay.cpu_s);
    group_fds = std::max(group_fds, relay.start_fds + static_cast<long long>(relay.peak_connections));
  }
  if (!relays.empty()) {
    std::printf(
        "relays             %zu: CPU %.2f s in all; the busiest held %lld fds and grew %.1f MiB (on a real "
        "job, each node's own)\n",
        relays.size(), relays_cpu, relay_fds, relay_kib / 1024.0);
  }
  if (groups > 0) {
    std::printf("group relays       %zu of them in front of the store: the busiest used %.2f s of CPU, held %lld fds\n",
                groups, group_cpu, group_fds);
  }
  if (failed > 0) std::printf("FAILED             %d ranks; first: %s\n", failed, first_error.c_str());
  std::printf(
      "RESULT impl=tutti n=%d processes=%d seconds=%.3f connected_s=%.3f placed_s=%.3f init_s=%.3f store_cpu_s=%.3f "
      "ranks_cpu_s=%.3f store_hwm_kib=%ld "
      "store_start_kib=%ld store_kib_per_rank=%.2f store_fds=%lld requests_per_rank=%.2f "
      "reply_bytes_per_rank=%.0f secret=%d relays=%zu relay_groups=%zu relays_cpu_s=%.3f relay_fds=%lld failed=%d\n",
      options.ranks, options.processes, done_s, connected_s, placed_s, initialised_s, server.cpu_s, ranks_cpu,
      server.hwm_kib, server.start_kib, kib_per_rank, peak_fds, server.requests / n, server.reply_bytes / n,
      options.secret ? 1 : 0, relays.size(), groups, relays_cpu, relay_fds, failed);
  return failed == 0 ? 0 : 1;
}
