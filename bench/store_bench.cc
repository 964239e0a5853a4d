// tutti-store-bench: how fast the rendezvous store serves many clients, and how much
// memory its server needs doing so.
//
// Run:   build/bin/tutti-store-bench [-c CLIENTS] [-n CALLS] [-v VALUE_BYTES] [--no-secret]
// Defaults: 64 clients, 100000 calls, 32-byte values, with a job secret. The server
// runs in a child process of its own, so that its peak memory (VmHWM) is its own; the
// clients are threads of this process, one connection each, making set, get and add in
// turn (the workload of tests/runtime/store/test_server_load.cc). Prints, e.g.:
//   tutti-store-bench: 64 clients, 100000 calls (set/get/add in turn), 32-byte values, secret on
//   connect+handshake  64 clients in 12.3 ms
//   calls              100000 in 4.21 s: 23753 calls/s
//   server memory      peak (VmHWM) 9.8 MiB; 7.1 MiB before the clients came
//   RESULT impl=tutti clients=64 calls=100000 seconds=4.210 calls_per_s=23753 server_hwm_kib=10036 ...
// The RESULT line is for scripts/bench-store-vs-torch.sh, which runs torch's TCPStore
// through bench/store_bench_torch.py the same way.
//
// It includes runtime headers, unlike the collectives' bench: the store has no C API.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/process_probe.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/loop/loop.h"
#include "runtime/store/auth.h"
#include "runtime/store/client.h"
#include "runtime/store/server.h"

namespace {

using Clock = std::chrono::steady_clock;
using tutti::bench::read_all;
using tutti::bench::status_kib;
using tutti::bench::write_all;

struct Options {
  int clients = 64;
  int calls = 100000;
  int value_bytes = 32;
  bool secret = true;
};

// What the server's process reports when it is told to stop.
struct ServerReport {
  long start_kib = 0;  // VmRSS once listening, before any client
  long hwm_kib = 0;    // VmHWM at the end
  unsigned long long requests = 0;
  unsigned long long keys = 0;
};

// The server's process: listens, says its port, serves until the parent closes
// stop_fd (or exits), then reports its memory.
[[noreturn]] void serve(const std::string& secret, int report_fd, int stop_fd) {
  ServerReport report;
  uint16_t port = 0;
  try {
    auto loop = tutti::loop::Loop::create();
    auto server = tutti::store::Server::start(loop, "127.0.0.1", 0, {}, secret);
    port = server->port();
    report.start_kib = status_kib("VmRSS");
    write_all(report_fd, &port, sizeof(port));
    char byte;
    ssize_t ignored = read(stop_fd, &byte, 1);  // EOF when the parent is done
    (void)ignored;
    auto stats = server->stats();
    report.requests = stats.requests;
    report.keys = stats.keys;
    report.hwm_kib = status_kib("VmHWM");
    server.reset();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-store-bench: the server failed: %s\n", e.what());
    write_all(report_fd, &port, sizeof(port));
    _exit(1);
  }
  write_all(report_fd, &report, sizeof(report));
  _exit(0);
}

int usage(const char* problem) {
  std::fprintf(stderr,
               "tutti-store-bench: %s\nusage: tutti-store-bench [-c CLIENTS (64)] [-n CALLS (100000)] "
               "[-v VALUE_BYTES (32)] [--no-secret]\n",
               problem);
  return 2;
}

std::string key_of(int client, int slot) { return "t" + std::to_string(client) + "/k" + std::to_string(slot); }

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--no-secret") {
      options.secret = false;
    } else if ((arg == "-c" || arg == "-n" || arg == "-v") && value) {
      int number = std::atoi(value);
      if (number < 1 || number > 100000000) return usage(("bad value for " + arg).c_str());
      (arg == "-c" ? options.clients : arg == "-n" ? options.calls : options.value_bytes) = number;
      ++i;
    } else {
      return usage(("unknown argument " + arg).c_str());
    }
  }
  std::string secret = options.secret ? tutti::store::auth::random_secret_hex() : "";

  // Forked before this process has threads (the loops come after), so the child is a
  // clean one-thread copy.
  int report_pipe[2];
  int stop_pipe[2];
  if (pipe(report_pipe) != 0 || pipe(stop_pipe) != 0) return usage("cannot create pipes");
  pid_t server_pid = fork();
  if (server_pid == 0) {
    close(report_pipe[0]);
    close(stop_pipe[1]);
    serve(secret, report_pipe[1], stop_pipe[0]);
  }
  close(report_pipe[1]);
  close(stop_pipe[0]);
  uint16_t port = 0;
  if (server_pid < 0 || !read_all(report_pipe[0], &port, sizeof(port)) || port == 0) {
    std::fprintf(stderr, "tutti-store-bench: the server process did not start\n");
    return 1;
  }

  std::printf("tutti-store-bench: %d clients, %d calls (set/get/add in turn), %d-byte values, secret %s\n",
              options.clients, options.calls, options.value_bytes, options.secret ? "on" : "off");
  int wrong = 0;
  double seconds = 0;
  try {
    auto loop = tutti::loop::Loop::create();
    auto deadline = [] { return tutti::Deadline::after_ms(60000); };
    auto connect_start = Clock::now();
    std::vector<std::unique_ptr<tutti::store::Client>> clients;
    for (int c = 0; c < options.clients; ++c) {
      clients.push_back(tutti::store::Client::connect(loop, "127.0.0.1", port, deadline(), secret));
    }
    double connect_ms = std::chrono::duration<double, std::milli>(Clock::now() - connect_start).count();
    std::printf("connect+handshake  %d clients in %.1f ms\n", options.clients, connect_ms);

    std::string value(static_cast<size_t>(options.value_bytes), 'v');
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < options.clients; ++c) {
      threads.emplace_back([&, c] {
        tutti::store::Client& client = *clients[c];
        ++ready;
        while (!go.load()) std::this_thread::yield();
        for (int i = c, step = 0; i < options.calls; i += options.clients, ++step) {
          switch (step % 3) {
            case 0: client.set(key_of(c, step % 16), value, deadline()); break;
            case 1:
              if (client.get(key_of(c, (step - 1) % 16), deadline()) != value) ++mismatches;
              break;
            case 2: client.add("counter", 1, deadline()); break;
          }
        }
      });
    }
    while (ready.load() < options.clients) std::this_thread::yield();
    auto start = Clock::now();
    go = true;
    for (auto& t : threads) t.join();
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
    wrong = mismatches.load();
    clients.clear();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tutti-store-bench: %s\n", e.what());
    close(stop_pipe[1]);
    waitpid(server_pid, nullptr, 0);
    return 1;
  }

  close(stop_pipe[1]);
  ServerReport report;
  bool reported = read_all(report_pipe[0], &report, sizeof(report));
  int status = 0;
  waitpid(server_pid, &status, 0);
  if (!reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "tutti-store-bench: the server process did not report\n");
    return 1;
  }
  double rate = options.calls / seconds;
  std::printf("calls              %d in %.2f s: %.0f calls/s%s\n", options.calls, seconds, rate,
              wrong ? " (WRONG VALUES SEEN)" : "");
  std::printf("server memory      peak (VmHWM) %.1f MiB; %.1f MiB before the clients came\n", report.hwm_kib / 1024.0,
              report.start_kib / 1024.0);
  std::printf(
      "RESULT impl=tutti clients=%d calls=%d seconds=%.3f calls_per_s=%.0f server_hwm_kib=%ld "
      "server_start_kib=%ld wrong=%d\n",
      options.clients, options.calls, seconds, rate, report.hwm_kib, report.start_kib, wrong);
  return wrong == 0 ? 0 : 1;
}
