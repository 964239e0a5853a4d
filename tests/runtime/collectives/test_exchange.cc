// Exchange (runtime/collectives/exchange.cc), on its own and as every algorithm sees
// it: messages pair up by peer and order, an empty message and a message to oneself are
// real messages, a transport's failure comes back naming the operation and the peer,
// and whatever an operation leaves posted is released. Then, through every algorithm
// of algorithms.h: a rank called with another count is kMismatch naming it, an abort
// from another thread ends every waiting rank within milliseconds, and a rank that
// never joins is named in the kTimeout of those waiting for it.
#include <criterion/criterion.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/exchange.h"
#include "runtime/operation/scratch.h"
#include "tests/runtime/collectives/rank_threads.h"
#include "tests/runtime/collectives/thread_transport.h"

using rank_threads::first_failure;
using rank_threads::Outcome;
using rank_threads::run_ranks;
using tutti::Dtype;
using tutti::ReduceOp;
using tutti::Status;
using tutti::collectives::Exchange;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Every algorithm, run with `count` int32 elements per rank (root 0).
struct Algorithm {
  const char* name;
  void (*run)(Exchange& x, const void* send, void* recv, size_t count);
};

namespace c = tutti::collectives;
constexpr Dtype kInt32 = Dtype::kInt32;
constexpr ReduceOp kSum = ReduceOp::kSum;

const Algorithm kAlgorithms[] = {
    {"all_reduce_ring",
     [](Exchange& x, const void* s, void* r, size_t n) { c::all_reduce_ring(x, s, r, n, kInt32, kSum); }},
    {"all_reduce_recursive_doubling",
     [](Exchange& x, const void* s, void* r, size_t n) { c::all_reduce_recursive_doubling(x, s, r, n, kInt32, kSum); }},
    {"all_reduce_rabenseifner",
     [](Exchange& x, const void* s, void* r, size_t n) { c::all_reduce_rabenseifner(x, s, r, n, kInt32, kSum); }},
    {"reduce_binomial",
     [](Exchange& x, const void* s, void* r, size_t n) { c::reduce_binomial(x, s, r, n, kInt32, kSum, 0); }},
    {"reduce_ring", [](Exchange& x, const void* s, void* r, size_t n) { c::reduce_ring(x, s, r, n, kInt32, kSum, 0); }},
    {"reduce_scatter_ring",
     [](Exchange& x, const void* s, void* r, size_t n) { c::reduce_scatter_ring(x, s, r, n, kInt32, kSum); }},
    {"reduce_scatter_pairwise",
     [](Exchange& x, const void* s, void* r, size_t n) { c::reduce_scatter_pairwise(x, s, r, n, kInt32, kSum); }},
    {"reduce_scatter_recursive_halving",
     [](Exchange& x, const void* s, void* r, size_t n) {
       c::reduce_scatter_recursive_halving(x, s, r, n, kInt32, kSum);
     }},
    {"broadcast_binomial", [](Exchange& x, const void*, void* r, size_t n) { c::broadcast_binomial(x, r, n * 4, 0); }},
    {"broadcast_scatter_all_gather",
     [](Exchange& x, const void*, void* r, size_t n) { c::broadcast_scatter_all_gather(x, r, n * 4, 0); }},
    {"all_gather_ring", [](Exchange& x, const void* s, void* r, size_t n) { c::all_gather_ring(x, s, r, n * 4); }},
    {"all_gather_bruck", [](Exchange& x, const void* s, void* r, size_t n) { c::all_gather_bruck(x, s, r, n * 4); }},
    {"all_gather_recursive_doubling",
     [](Exchange& x, const void* s, void* r, size_t n) { c::all_gather_recursive_doubling(x, s, r, n * 4); }},
    {"gather_linear", [](Exchange& x, const void* s, void* r, size_t n) { c::gather_linear(x, s, r, n * 4, 0); }},
    {"gather_binomial", [](Exchange& x, const void* s, void* r, size_t n) { c::gather_binomial(x, s, r, n * 4, 0); }},
    {"scatter_linear", [](Exchange& x, const void* s, void* r, size_t n) { c::scatter_linear(x, s, r, n * 4, 0); }},
    {"scatter_binomial", [](Exchange& x, const void* s, void* r, size_t n) { c::scatter_binomial(x, s, r, n * 4, 0); }},
    {"all_to_all_pairwise",
     [](Exchange& x, const void* s, void* r, size_t n) { c::all_to_all_pairwise(x, s, r, n * 4); }},
    {"all_to_all_linear", [](Exchange& x, const void* s, void* r, size_t n) { c::all_to_all_linear(x, s, r, n * 4); }},
    {"barrier_dissemination", [](Exchange& x, const void*, void*, size_t) { c::barrier_dissemination(x); }},
};

// Each rank's buffers, big enough for any algorithm at the counts used here. They
// outlive the ranks' Exchanges, which release a failed operation's requests only as
// the rank's thread unwinds past them.
class Buffers {
 public:
  explicit Buffers(int size)
      : send_(static_cast<size_t>(size), std::vector<int32_t>(1024, 1)),
        recv_(static_cast<size_t>(size), std::vector<int32_t>(1024, 0)) {}
  void run(const Algorithm& algorithm, int rank, Exchange& x, size_t count) {
    algorithm.run(x, send_[static_cast<size_t>(rank)].data(), recv_[static_cast<size_t>(rank)].data(), count);
  }

 private:
  std::vector<std::vector<int32_t>> send_;
  std::vector<std::vector<int32_t>> recv_;
};

const Algorithm& algorithm_named(const std::string& name) {
  for (const Algorithm& algorithm : kAlgorithms) {
    if (name == algorithm.name) return algorithm;
  }
  cr_assert_fail("no algorithm named %s", name.c_str());
  return kAlgorithms[0];
}

// One rank's Exchange over a World, driven from the test's own thread.
struct Single {
  explicit Single(int size, int rank = 0) : world(size), transport(world, rank) {}
  thread_transport::World world;
  thread_transport::ThreadTransport transport;
  tutti::Scratch scratch;
  rank_threads::Options options;
  std::string where = tutti::concat("comm \"test\" (rank ", transport.rank(), " of ", world.size(), ")");
  tutti::OpContext context = rank_threads::make_context(transport.rank(), options, where, nullptr, &scratch);
};

// A transport whose every request fails as a lost peer would.
class LosingTransport : public thread_transport::ThreadTransport {
 public:
  using ThreadTransport::ThreadTransport;
  bool done(tutti::transport::Request*) override {
    tutti::fail(Status::kPeerLost, "the connection to rank 1 was reset; is rank 1 still running?");
  }
};

}  // namespace

Test(exchange, messages_to_oneself_and_empty_ones_arrive, .timeout = 10) {
  Single one(1);
  Exchange x(one.transport, one.context);
  const char text[] = "hello";
  char got[sizeof(text)] = {};
  x.recv(0, got, sizeof(got));
  x.recv(0, nullptr, 0);
  x.send(0, text, sizeof(text));
  x.send(0, nullptr, 0);
  x.wait();
  cr_assert_str_eq(got, "hello");
  cr_assert_eq(one.world.live_requests(), 0, "wait() left requests posted");
}

Test(exchange, what_is_posted_is_released_even_without_wait, .timeout = 10) {
  Single one(2);
  {
    Exchange x(one.transport, one.context);
    int32_t value = 0;
    x.recv(1, &value, sizeof(value));
    x.send(1, &value, sizeof(value));
    cr_assert_eq(one.world.live_requests(), 2);
  }
  cr_assert_eq(one.world.live_requests(), 0, "~Exchange left requests posted");
}

// wait_first(n) waits for the n requests posted first and leaves the later ones in
// flight, for the next wait; after a failure, the destructor still releases them all.
Test(exchange, wait_first_leaves_the_later_requests_posted, .timeout = 10) {
  Single one(1);
  {
    Exchange x(one.transport, one.context);
    char first[2] = {}, second[2] = {};
    x.recv(0, first, sizeof(first));
    x.recv(0, second, sizeof(second));
    x.send(0, "a", 2);
    x.wait_first(1);
    cr_assert_str_eq(first, "a");
    // The send met its receive as it was posted (a null request: nothing to count).
    cr_assert_eq(one.world.live_requests(), 1, "the later receive should still be posted");
    x.send(0, "b", 2);
    x.wait();
    cr_assert_str_eq(second, "b");
    cr_assert_eq(one.world.live_requests(), 0, "wait() left requests posted");
  }
  thread_transport::World world(2);
  LosingTransport losing(world, 0);
  {
    Exchange x(losing, one.context);
    int32_t values[2] = {};
    x.recv(1, &values[0], sizeof(int32_t));
    x.recv(1, &values[1], sizeof(int32_t));
    try {
      x.wait_first(1);
      cr_assert_fail("wait_first() did not rethrow the transport's failure");
    } catch (const tutti::Error& e) {
      cr_assert_eq(e.status(), Status::kPeerLost);
    }
    cr_assert_eq(world.live_requests(), 2);
  }
  cr_assert_eq(world.live_requests(), 0, "~Exchange left requests posted after wait_first failed");
}

Test(exchange, a_transport_failure_names_the_operation_and_the_peer, .timeout = 10) {
  thread_transport::World world(2);
  LosingTransport transport(world, 0);
  tutti::Scratch scratch;
  rank_threads::Options options;
  options.op_name = "all_reduce";
  const std::string where = "comm \"test\" (rank 0 of 2)";
  const auto context = rank_threads::make_context(0, options, where, nullptr, &scratch);
  Exchange x(transport, context);
  int32_t value = 0;
  x.recv(1, &value, sizeof(value));
  try {
    x.wait();
    cr_assert_fail("wait() did not rethrow the transport's failure");
  } catch (const tutti::Error& e) {
    cr_assert_eq(e.status(), Status::kPeerLost);
    cr_assert(contains(e.what(), "all_reduce #1 on comm \"test\" (rank 0 of 2): receiving from rank 1: the connection"),
              "%s", e.what());
  }
}

// The exact messages, for a rank that sends the root a shorter and a longer block than
// it expects. Linear gather, because there only the root receives, so only it can
// notice; rank 2's send stays posted until the root has taken it.
Test(exchange, a_different_count_is_a_mismatch_naming_the_peer, .timeout = 30) {
  struct Variant {
    size_t odd_count;
    const char* message;
  };
  const Variant variants[] = {
      {4,
       "gather #1 on comm \"test\" (rank 0 of 3): rank 2 sent 16 bytes where this rank expected 28: "
       "the ranks called it with different counts"},
      {10, "gather #1 on comm \"test\" (rank 0 of 3): rank 2 sent more than the 28 bytes this rank expected ("},
  };
  const Algorithm& gather = algorithm_named("gather_linear");
  for (const Variant& variant : variants) {
    rank_threads::Options options;
    options.op_name = "gather";
    Buffers buffers(3);
    auto outcomes = run_ranks(
        3, [&](int rank, Exchange& x) { buffers.run(gather, rank, x, rank == 2 ? variant.odd_count : 7); }, options);
    cr_assert_eq(outcomes[0].status, Status::kMismatch, "rank 0: status %d: %s", static_cast<int>(outcomes[0].status),
                 outcomes[0].message.c_str());
    cr_assert(contains(outcomes[0].message, variant.message), "rank 0 said: %s", outcomes[0].message.c_str());
  }
}

// Whatever the algorithm, a rank called with another count is reported as kMismatch
// by a rank that talks to it, naming the two (never a timeout or a wrong result), and
// every rank releases what it had posted.
Test(exchange, every_algorithm_reports_a_different_count, .timeout = 60) {
  const int size = 4;
  const int odd = 2;
  for (const Algorithm& algorithm : kAlgorithms) {
    if (std::string(algorithm.name) == "barrier_dissemination") continue;
    for (size_t odd_count : {3, 11}) {
      int live = -1;
      rank_threads::Options options;
      options.live_requests_after = &live;
      Buffers buffers(size);
      auto outcomes = run_ranks(
          size, [&](int rank, Exchange& x) { buffers.run(algorithm, rank, x, rank == odd ? odd_count : 7); }, options);
      bool reported = false;
      for (int rank = 0; rank < size; ++rank) {
        const Outcome& outcome = outcomes[static_cast<size_t>(rank)];
        const bool expected_status =
            outcome.status == Status::kOk || outcome.status == Status::kMismatch || outcome.status == Status::kAborted;
        cr_assert(expected_status, "%s, rank %d: %s", algorithm.name, rank, outcome.message.c_str());
        if (outcome.status != Status::kMismatch) continue;
        reported = true;
        cr_assert(rank == odd || contains(outcome.message, tutti::concat("rank ", odd, " sent")),
                  "%s, rank %d blames the wrong rank: %s", algorithm.name, rank, outcome.message.c_str());
      }
      cr_assert(reported, "%s: no rank noticed rank %d's count of %zu: %s", algorithm.name, odd, odd_count,
                first_failure(outcomes).c_str());
      cr_assert_eq(live, 0, "%s: %d requests were left posted", algorithm.name, live);
    }
  }
}

// A rank that made another call (its messages carry another Tag::check) is reported as
// kMismatch by a rank that receives from it, whatever the algorithm, with no
// TUTTI_CHECK exchange: the check rides on the algorithm's own messages.
Test(exchange, every_algorithm_reports_a_rank_that_made_another_call, .timeout = 60) {
  const int size = 4;
  const int odd = 2;
  for (const Algorithm& algorithm : kAlgorithms) {
    int live = -1;
    rank_threads::Options options;
    options.live_requests_after = &live;
    options.odd_call_rank = odd;
    Buffers buffers(size);
    auto outcomes = run_ranks(
        size, [&](int rank, Exchange& x) { buffers.run(algorithm, rank, x, 7); }, options);
    bool reported = false;
    for (int rank = 0; rank < size; ++rank) {
      const Outcome& outcome = outcomes[static_cast<size_t>(rank)];
      cr_assert(
          outcome.status == Status::kOk || outcome.status == Status::kMismatch || outcome.status == Status::kAborted,
          "%s, rank %d: %s", algorithm.name, rank, outcome.message.c_str());
      if (outcome.status != Status::kMismatch) continue;
      reported = true;
      cr_assert(contains(outcome.message, "sent a message for another call"), "%s, rank %d: %s", algorithm.name, rank,
                outcome.message.c_str());
      cr_assert(rank == odd || contains(outcome.message, tutti::concat("rank ", odd, " sent")),
                "%s, rank %d blames the wrong rank: %s", algorithm.name, rank, outcome.message.c_str());
    }
    cr_assert(reported, "%s: no rank noticed that rank %d made another call: %s", algorithm.name, odd,
              first_failure(outcomes).c_str());
    cr_assert_eq(live, 0, "%s: %d requests were left posted", algorithm.name, live);
  }
}

// tutti_comm_abort sets the flag from another thread while ranks wait for one that
// never comes: every waiting rank must end with kAborted within milliseconds.
Test(exchange, abort_ends_every_algorithm_promptly, .timeout = 60) {
  const int size = 3;
  for (const Algorithm& algorithm : kAlgorithms) {
    rank_threads::Options options;
    options.abort_after_ms = 50;
    options.abort_on_failure = false;
    Buffers buffers(size);
    auto outcomes = run_ranks(
        size,
        [&](int rank, Exchange& x) {
          if (rank != size - 1) buffers.run(algorithm, rank, x, 7);
        },
        options);
    bool someone_waited = false;
    for (int rank = 0; rank < size - 1; ++rank) {
      const Outcome& outcome = outcomes[static_cast<size_t>(rank)];
      if (outcome.status == Status::kOk) continue;
      someone_waited = true;
      cr_assert_eq(outcome.status, Status::kAborted, "%s, rank %d: %s", algorithm.name, rank, outcome.message.c_str());
      cr_assert(contains(outcome.message, "was aborted"), "%s: %s", algorithm.name, outcome.message.c_str());
      cr_assert_lt(outcome.elapsed_ms, 50 + tt_timeout_ms(1000), "%s, rank %d took %lld ms to notice the abort",
                   algorithm.name, rank, static_cast<long long>(outcome.elapsed_ms));
    }
    cr_assert(someone_waited, "%s: no rank waited for the missing one", algorithm.name);
  }
}

// A rank that never calls the collective: the ranks that need it give up at the
// deadline with kTimeout, naming it.
Test(exchange, a_rank_that_never_joins_is_named_in_the_timeout, .timeout = 60) {
  const int size = 3;
  const int missing = 2;
  for (const Algorithm& algorithm : kAlgorithms) {
    rank_threads::Options options;
    options.op_name = "all_reduce";
    options.timeout_ms = 200;
    options.abort_on_failure = false;
    Buffers buffers(size);
    auto outcomes = run_ranks(
        size,
        [&](int rank, Exchange& x) {
          if (rank != missing) buffers.run(algorithm, rank, x, 7);
        },
        options);
    bool named = false;
    for (int rank = 0; rank < size; ++rank) {
      const Outcome& outcome = outcomes[static_cast<size_t>(rank)];
      if (rank == missing || outcome.status == Status::kOk) continue;
      cr_assert_eq(outcome.status, Status::kTimeout, "%s, rank %d: %s", algorithm.name, rank, outcome.message.c_str());
      const std::string prefix = tutti::concat("all_reduce #1 on comm \"test\" (rank ", rank,
                                               " of 3) timed out after 200 ms waiting for rank ");
      cr_assert(contains(outcome.message, prefix), "%s: %s", algorithm.name, outcome.message.c_str());
      named = named || contains(outcome.message, tutti::concat("waiting for rank ", missing));
      cr_assert_lt(outcome.elapsed_ms, 200 + tt_timeout_ms(2000), "%s, rank %d: %lld ms", algorithm.name, rank,
                   static_cast<long long>(outcome.elapsed_ms));
    }
    cr_assert(named, "%s: no rank named rank %d as the one it waited for: %s", algorithm.name, missing,
              first_failure(outcomes).c_str());
  }
}
