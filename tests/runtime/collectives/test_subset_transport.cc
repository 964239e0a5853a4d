// SubsetTransport: some ranks of a transport as a communicator of their own, as the
// hierarchical collectives' inter-node step uses them (hierarchy.h).
#include <criterion/criterion.h>

#include <string>
#include <thread>
#include <vector>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/exchange.h"
#include "runtime/collectives/subset_transport.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/operation/scratch.h"
#include "tests/runtime/collectives/rank_threads.h"
#include "tests/runtime/collectives/thread_transport.h"

using tutti::Dtype;
using tutti::ReduceOp;
using tutti::Scratch;
using tutti::collectives::Exchange;
using tutti::collectives::SubsetTransport;

namespace {

constexpr int kSize = 6;

// Ranks 0, 2, 4 and ranks 1, 3, 5: two subsets whose members interleave, as the
// ranks of local rank 0 and 1 on three nodes of two do.
std::vector<int> subset_of(int rank) {
  std::vector<int> members;
  for (int r = rank % 2; r < kSize; r += 2) members.push_back(r);
  return members;
}

}  // namespace

// Both subsets run the same operation at once, under the same tags, over one
// transport: each sums its own ranks' data and nobody else's.
Test(subset_transport, two_subsets_run_one_operation_side_by_side, .timeout = 60) {
  thread_transport::World world(kSize);
  std::vector<std::unique_ptr<thread_transport::ThreadTransport>> transports;
  for (int rank = 0; rank < kSize; ++rank) {
    transports.push_back(std::make_unique<thread_transport::ThreadTransport>(world, rank));
  }
  tutti::Fault fault;
  std::vector<Scratch> scratch(kSize);
  std::vector<std::string> wheres(kSize, "comm \"test\"");
  const size_t count = 1000;
  std::vector<std::vector<float>> data(kSize, std::vector<float>(count));
  std::vector<std::string> errors(kSize);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kSize; ++rank) {
    for (size_t i = 0; i < count; ++i) data[rank][i] = static_cast<float>(rank * 1000 + i);
    threads.emplace_back([&, rank] {
      try {
        const auto context = rank_threads::make_context(rank, {}, wheres[rank], &fault, &scratch[rank]);
        SubsetTransport subset(*transports[rank], subset_of(rank), rank / 2);
        // Criterion asserts on the test's own thread only: say it, and check it there.
        if (subset.size() != kSize / 2 || subset.communicator_rank(1) != rank % 2 + 2) {
          errors[rank] = tutti::concat("size ", subset.size(), ", rank 1 is ", subset.communicator_rank(1));
          return;
        }
        Exchange x(subset, context);
        // In place, the ring for one subset size and recursive doubling for the other.
        if (rank % 2 == 0) {
          tutti::collectives::all_reduce_ring(x, data[rank].data(), data[rank].data(), count, Dtype::kFloat32,
                                              ReduceOp::kSum);
        } else {
          tutti::collectives::all_reduce_recursive_doubling(x, data[rank].data(), data[rank].data(), count,
                                                            Dtype::kFloat32, ReduceOp::kSum);
        }
      } catch (const tutti::Error& error) {
        errors[rank] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < kSize; ++rank) {
    cr_assert(errors[rank].empty(), "rank %d: %s", rank, errors[rank].c_str());
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (int member : subset_of(rank)) expected += static_cast<float>(member * 1000 + i);
      cr_assert_eq(data[rank][i], expected, "rank %d element %zu: %f, want %f", rank, i, data[rank][i], expected);
    }
  }
  cr_assert_eq(world.live_requests(), 0);
}

// What goes wrong is told in the communicator's ranks, not the subset's.
Test(subset_transport, messages_name_the_communicators_ranks, .timeout = 30) {
  thread_transport::World world(kSize);
  thread_transport::ThreadTransport transport(world, 3);
  tutti::Fault fault;
  Scratch scratch;
  std::string where = "comm \"test\" (rank 3 of 6)";
  rank_threads::Options options;
  options.timeout_ms = 200;
  const auto context = rank_threads::make_context(3, options, where, &fault, &scratch);
  SubsetTransport subset(transport, subset_of(3), 1);
  Exchange x(subset, context);
  char byte = 0;
  x.recv(2, &byte, 1);  // subset rank 2 is rank 5, which never sends
  try {
    x.wait();
    cr_assert_fail("a receive nobody sends to completed");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kTimeout, "%s", error.what());
    cr_assert(std::string(error.what()).find("rank 5's data") != std::string::npos, "%s", error.what());
  }
  cr_assert_throw(subset.post_send(3, {}, &byte, 1), tutti::Error);
}
