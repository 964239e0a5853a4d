// Runs one collective operation on `size` ranks as threads over a thread_transport
// World: each rank gets its own OpContext and Scratch, as its communicator would give
// it, and an Exchange for the body to run an algorithm on. What each rank threw (a
// tutti::Error) comes back as an Outcome, so that the checks run on the test's own
// thread, where Criterion's assertions work.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collectives/exchange.h"
#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/operation/op_context.h"
#include "runtime/operation/scratch.h"
#include "tests/runtime/collectives/thread_transport.h"
#include "tests/support/processes.h"

namespace rank_threads {

struct Outcome {
  tutti::Status status = tutti::Status::kOk;
  std::string message;
  size_t scratch_bytes = 0;  // what the rank's Scratch held afterwards
  int64_t elapsed_ms = 0;
};

struct Options {
  const char* op_name = "test_op";
  // The operation's deadline; long enough for the sweeps on a busy machine.
  int timeout_ms = tt_timeout_ms(20000);
  // When >= 0, the test's thread sets the abort flag (and interrupts every rank)
  // after this long, as tutti_comm_abort would.
  int abort_after_ms = -1;
  // When one rank fails, abort the others, so that a broken algorithm fails the test
  // at once instead of leaving its peers waiting for the deadline.
  bool abort_on_failure = true;
  // When set, receives the requests still posted once every rank has returned.
  int* live_requests_after = nullptr;
  // When >= 0, this rank's messages carry another call's check (Tag::check), as those
  // of a rank that made another call would.
  int odd_call_rank = -1;
};

// What rank's communicator would hand an operation: name and number for messages, the
// deadline from options, the communicator's fault, and the rank's scratch.
// `where` must outlive the context, as a communicator's description does.
inline tutti::OpContext make_context(int rank, const Options& options, const std::string& where,
                                     const tutti::Fault* fault, tutti::Scratch* scratch) {
  tutti::OpContext context;
  context.name = options.op_name;
  context.seq = 1;
  context.call_check = rank == options.odd_call_rank ? 2 : 1;
  context.deadline = tutti::Deadline::after_ms(options.timeout_ms);
  context.timeout_ms = options.timeout_ms;
  context.fault = fault;
  context.where = where;
  context.scratch = scratch;
  return context;
}

// body(rank, exchange) runs on each rank's thread. The buffers it passes must be
// created outside it: when an algorithm fails, the Exchange releases the requests still
// posted on them only after body has returned.
template <typename Body>
std::vector<Outcome> run_ranks(int size, Body&& body, const Options& options = {}) {
  using Clock = std::chrono::steady_clock;
  thread_transport::World world(size);
  std::vector<std::unique_ptr<thread_transport::ThreadTransport>> transports;
  for (int rank = 0; rank < size; ++rank) {
    transports.push_back(std::make_unique<thread_transport::ThreadTransport>(world, rank));
  }
  std::vector<tutti::Scratch> scratch(static_cast<size_t>(size));
  std::vector<std::string> wheres;
  for (int rank = 0; rank < size; ++rank)
    wheres.push_back(tutti::concat("comm \"test\" (rank ", rank, " of ", size, ")"));
  std::vector<Outcome> outcomes(static_cast<size_t>(size));
  tutti::Fault fault;
  auto abort_all = [&] {
    fault.raise(tutti::Status::kAborted, "comm \"test\" was aborted (tutti_comm_abort)");
    for (auto& transport : transports) transport->interrupt();
  };

  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      Outcome& outcome = outcomes[static_cast<size_t>(rank)];
      const tutti::OpContext context =
          make_context(rank, options, wheres[static_cast<size_t>(rank)], &fault, &scratch[static_cast<size_t>(rank)]);
      const Clock::time_point start = Clock::now();
      try {
        tutti::collectives::Exchange exchange(*transports[static_cast<size_t>(rank)], context);
        body(rank, exchange);
      } catch (const tutti::Error& e) {
        outcome.status = e.status();
        outcome.message = e.what();
      } catch (const std::exception& e) {
        outcome.status = tutti::Status::kInternal;
        outcome.message = tutti::concat("not a tutti::Error: ", e.what());
      }
      if (outcome.status != tutti::Status::kOk && options.abort_on_failure) abort_all();
      outcome.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      outcome.scratch_bytes = context.scratch->held_bytes();
    });
  }
  if (options.abort_after_ms >= 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options.abort_after_ms));
    abort_all();
  }
  for (auto& thread : threads) thread.join();
  if (options.live_requests_after != nullptr) *options.live_requests_after = world.live_requests();
  return outcomes;
}

// "" when every rank succeeded, else the failure that came first: one that is not
// kAborted if there is one, since abort_on_failure turns the others into kAborted.
inline std::string first_failure(const std::vector<Outcome>& outcomes) {
  std::string aborted;
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    const Outcome& outcome = outcomes[rank];
    if (outcome.status == tutti::Status::kOk) continue;
    std::string text =
        tutti::concat("rank ", rank, " failed (status ", static_cast<int>(outcome.status), "): ", outcome.message);
    if (outcome.status != tutti::Status::kAborted) return text;
    if (aborted.empty()) aborted = text;
  }
  return aborted;
}

}  // namespace rank_threads
