// What the communicator's tests share: the options of a rank meeting at a loopback
// port, the calls they make on a communicator, and a world of ranks as forked
// processes (tt_fork), each running the runtime itself as a program's process would:
// Comm::init keeps one store and one generation of keys per process, so ranks of one
// world cannot be threads of one process. Each rank prints what it found on lines of
// its own, which the test reads back once every rank has ended.
#pragma once

#include <criterion/criterion.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/operation/call.h"
#include "tests/support/processes.h"

namespace comm_ranks {

// Rank `rank` of `size`; rank 0 serves the store on 127.0.0.1:port.
inline tutti::comm::Options options(int rank, int size, int port) {
  tutti::comm::Options options;
  options.request.rank = rank;
  options.request.world_size = size;
  options.request.init_method = tutti::concat("tcp://127.0.0.1:", port);
  options.init_timeout_ms = tt_timeout_ms(20000);
  options.op_timeout_ms = tt_timeout_ms(20000);
  return options;
}

// A world of one, meeting at a free port.
inline std::unique_ptr<tutti::comm::Comm> solo(const char* name = "world") {
  tutti::comm::Options o = options(0, 1, tt_free_port());
  o.name = name;
  return tutti::comm::Comm::init(o);
}

// Blocking calls on host buffers, as tutti.h makes them.
inline int all_reduce_sum(tutti::comm::Comm& comm, int value) {
  tutti::Call call;
  call.kind = tutti::Kind::kAllReduce;
  call.send = &value;
  call.recv = &value;
  call.count = 1;
  call.dtype = static_cast<int32_t>(tutti::Dtype::kInt32);
  call.op = static_cast<int32_t>(tutti::ReduceOp::kSum);
  comm.issue(call, "tutti_all_reduce", false);
  return value;
}

inline int broadcast(tutti::comm::Comm& comm, int value, int root) {
  tutti::Call call;
  call.kind = tutti::Kind::kBroadcast;
  call.send = &value;
  call.recv = &value;
  call.count = 1;
  call.dtype = static_cast<int32_t>(tutti::Dtype::kInt32);
  call.root = root;
  comm.issue(call, "tutti_broadcast", false);
  return value;
}

inline void barrier(tutti::comm::Comm& comm) {
  tutti::Call call;
  call.kind = tutti::Kind::kBarrier;
  comm.issue(call, "tutti_barrier", false);
}

// "STATUS message" of what fn threw, or "OK".
template <typename Fn>
std::string outcome_of(Fn&& fn) {
  try {
    fn();
  } catch (const tutti::Error& e) {
    return tutti::concat(tutti::status_word(e.status()), " ", e.what());
  }
  return "OK";
}

struct Rank {
  int exit_code = -1;  // -1 if it was killed or never ended
  int signal = 0;      // what ended it, if a signal did
  std::string output;
};

// Runs body(rank, port) as `size` forked ranks and returns how each ended and what it
// printed, once all have ended or timeout_ms (scaled) passed: those still running
// then are killed and count as failed. body returns the exit code; what it throws is
// printed and exits 1. The caller's process must not have started the runtime yet.
inline std::vector<Rank> run(int size, const std::function<int(int rank, int port)>& body, int timeout_ms) {
  struct Child {
    const std::function<int(int, int)>* body;
    int rank;
    int port;
  };
  int port = tt_free_port();
  cr_assert_gt(port, 0, "no free port");
  std::vector<tt_process> processes(static_cast<size_t>(size));
  std::vector<Child> children;
  for (int rank = 0; rank < size; ++rank) children.push_back(Child{&body, rank, port});
  for (int rank = 0; rank < size; ++rank) {
    int started = tt_fork(
        &processes[static_cast<size_t>(rank)],
        [](void* arg) -> int {
          auto* child = static_cast<Child*>(arg);
          try {
            return (*child->body)(child->rank, child->port);
          } catch (const tutti::Error& e) {
            printf("rank %d threw %s: %s\n", child->rank, tutti::status_word(e.status()), e.what());
            return 1;
          } catch (const std::exception& e) {
            printf("rank %d threw: %s\n", child->rank, e.what());
            return 1;
          }
        },
        &children[static_cast<size_t>(rank)]);
    if (started != 0) {
      tt_cleanup_all(processes.data(), rank);
      cr_assert_fail("cannot fork rank %d", rank);
    }
  }
  tt_wait_all(processes.data(), size, tt_timeout_ms(timeout_ms));
  std::vector<Rank> ranks(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    tt_process& process = processes[static_cast<size_t>(rank)];
    Rank& r = ranks[static_cast<size_t>(rank)];
    if (process.exited) {
      r.exit_code = process.signaled ? -1 : process.exit_code;
      r.signal = process.signaled;
    }
    char* text = tt_output(&process);
    r.output = text;
    free(text);
    tt_cleanup(&process);
  }
  return ranks;
}

// Every rank's output, for failure messages.
inline std::string outputs(const std::vector<Rank>& ranks) {
  std::string text;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    text += tutti::concat("--- rank ", rank, " (exit ", ranks[rank].exit_code, ", signal ", ranks[rank].signal, "):\n",
                          ranks[rank].output);
  }
  return text;
}

// The rest of the first line of text that starts with prefix, or "" if none does.
inline std::string line_after(const std::string& text, const std::string& prefix) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, prefix.size(), prefix) == 0) return text.substr(at + prefix.size(), end - at - prefix.size());
    at = end + 1;
  }
  return "";
}

}  // namespace comm_ranks
