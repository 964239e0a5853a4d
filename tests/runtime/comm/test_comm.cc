// The communicator (runtime/comm/comm.h): a world of one in this process, which knows
// its place, runs operations and dumps them, and which abort() makes unusable, saying
// why; and worlds of forked ranks meeting at a store on loopback, whose collectives
// agree, and where a rank killed, or one that aborts and leaves, is named to the
// others, whose communicator then refuses calls naming the loss.
#include <signal.h>

#include <algorithm>

#include "tests/runtime/comm/comm_ranks.h"
#include "tests/runtime/store/store_test.h"

using comm_ranks::line_after;
using comm_ranks::outcome_of;
using comm_ranks::outputs;
using store_test::contains;
using store_test::ms_since;
using tutti::Status;

namespace {

// Polls until comm's store has declared `rank` lost, at most ms.
bool wait_lost(const tutti::comm::Comm& comm, int rank, int ms) {
  return store_test::eventually(
      [&] {
        auto lost = comm.lost_ranks();
        return std::find(lost.begin(), lost.end(), rank) != lost.end();
      },
      ms);
}

}  // namespace

Test(comm, world_of_one_knows_its_place_and_dumps_its_operations, .timeout = 30) {
  auto comm = comm_ranks::solo("solo");
  cr_expect(comm->rank() == 0 && comm->size() == 1);
  cr_expect(comm->local_rank() == 0 && comm->local_size() == 1 && comm->node_rank() == 0);
  cr_expect_eq(comm->name(), "solo");
  cr_expect_eq(comm->describe(), "comm \"solo\" (rank 0 of 1)");
  cr_expect(comm->lost_ranks().empty());
  cr_expect_eq(comm->dump(), "tutti: comm \"solo\" (rank 0 of 1), recent collectives:\n  (no collective yet)\n");

  cr_expect_eq(comm_ranks::all_reduce_sum(*comm, 41), 41);
  comm_ranks::barrier(*comm);
  float data[4] = {1, 2, 3, 4};
  tutti::Call call;
  call.kind = tutti::Kind::kAllReduce;
  call.send = data;
  call.recv = data;
  call.count = 4;
  call.dtype = static_cast<int32_t>(tutti::Dtype::kFloat32);
  call.op = static_cast<int32_t>(tutti::ReduceOp::kMax);
  auto work = comm->issue(call, "tutti_all_reduce", true);
  cr_assert(work != nullptr, "an asynchronous call returns its Work");
  cr_assert(work->wait_for(tt_timeout_ms(10000)));
  cr_expect(work->status() == Status::kOk, "%s", work->message().c_str());
  cr_expect(data[0] == 1 && data[3] == 4);

  std::string dump = comm->dump();
  cr_expect_eq(dump.rfind("tutti: comm \"solo\" (rank 0 of 1), recent collectives:\n", 0), 0u, "%s", dump.c_str());
  cr_expect(contains(dump, "\n  #1 all_reduce int32 x 1 sum: done in "), "%s", dump.c_str());
  cr_expect(contains(dump, "\n  #2 barrier: done in "), "%s", dump.c_str());
  cr_expect(contains(dump, "\n  #3 all_reduce float32 x 4 max: done in "), "%s", dump.c_str());
}

Test(comm, abort_makes_it_unusable_and_says_why, .timeout = 30) {
  auto comm = comm_ranks::solo();
  comm->abort();
  comm->abort();  // a second one changes nothing
  std::string refused = outcome_of([&] { comm_ranks::barrier(*comm); });
  cr_expect_eq(refused,
               "ABORTED tutti_barrier: comm \"world\" (rank 0 of 1) is unusable: comm \"world\" (rank 0 of 1) was "
               "aborted (tutti_comm_abort); destroy it and create a new one (tutti_comm_shrink keeps the ranks still "
               "alive)");
  cr_expect_eq(comm->dump().rfind("tutti: comm \"world\" (rank 0 of 1) is unusable (comm \"world\" (rank 0 of 1) was "
                                  "aborted (tutti_comm_abort)); recent collectives:\n",
                                  0),
               0u, "%s", comm->dump().c_str());
  auto start = store_test::Clock::now();
  comm.reset();
  cr_expect_lt(ms_since(start), 5000, "an aborted communicator took %lld ms to destroy",
               static_cast<long long>(ms_since(start)));
}

// Three ranks meet on one node: each knows its place, and a collective agrees.
Test(comm, ranks_meet_and_reduce_together, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        auto comm = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        printf("PLACE %d %d %d %d %d\n", comm->rank(), comm->size(), comm->local_rank(), comm->local_size(),
               comm->node_rank());
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*comm, rank + 1));
        printf("DESCRIBE %s\n", comm->describe().c_str());
        return 0;
      },
      30000);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "PLACE "), tutti::concat(rank, " 3 ", rank, " 3 0"), "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "SUM "), "6", "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "DESCRIBE "), tutti::concat("comm \"world\" (rank ", rank, " of 3)"));
  }
}

// Rank 2 is killed: the others learn it from the store, and their communicator
// refuses calls naming the rank, its pid and why; destroying it does not wait for
// the lost rank.
Test(comm, killed_rank_is_named_and_the_communicator_refuses_calls, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        auto comm = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        printf("PID %d\n", static_cast<int>(getpid()));
        comm_ranks::barrier(*comm);
        if (rank == 2) raise(SIGKILL);
        if (!wait_lost(*comm, 2, 10000)) return 2;
        printf("LOST %zu %d\n", comm->lost_ranks().size(), comm->lost_ranks().at(0));
        printf("BARRIER %s\n", outcome_of([&] { comm_ranks::barrier(*comm); }).c_str());
        std::string dump = comm->dump();
        printf("DUMP %s\n", dump.substr(0, dump.find('\n')).c_str());
        auto start = store_test::Clock::now();
        comm.reset();
        printf("DESTROYED %lld\n", static_cast<long long>(ms_since(start)));
        return 0;
      },
      30000);
  cr_expect_eq(ranks[2].signal, SIGKILL, "%s", outputs(ranks).c_str());
  std::string victim_pid = line_after(ranks[2].output, "PID ");
  cr_assert(!victim_pid.empty(), "%s", outputs(ranks).c_str());
  for (int rank = 0; rank < 2; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "LOST "), "1 2", "%s", outputs(ranks).c_str());
    std::string refused = line_after(out, "BARRIER ");
    std::string prefix =
        tutti::concat("PEER_LOST tutti_barrier: comm \"world\" (rank ", rank, " of 3) is unusable: ", "rank 2 (host ");
    cr_expect_eq(refused.rfind(prefix, 0), 0u, "%s", refused.c_str());
    cr_expect(contains(refused, ", pid " + victim_pid + ") was lost: its connection to the store closed"), "%s",
              refused.c_str());
    cr_expect(contains(refused, "; destroy it and create a new one (tutti_comm_shrink keeps the ranks still alive)"),
              "%s", refused.c_str());
    cr_expect(contains(line_after(out, "DUMP "), " is unusable (rank 2 (host "), "%s", out.c_str());
    cr_expect_lt(atoi(line_after(out, "DESTROYED ").c_str()), 5000, "%s", out.c_str());
  }
}

// Rank 1 aborts and destroys its communicator, and its process goes on: it ends
// cleanly, and rank 0 sees its connection go as a loss.
Test(comm, rank_that_aborts_leaves_cleanly_and_is_lost_to_the_others, .timeout = 60) {
  auto ranks = comm_ranks::run(
      2,
      [](int rank, int port) {
        auto comm = tutti::comm::Comm::init(comm_ranks::options(rank, 2, port));
        comm_ranks::barrier(*comm);
        if (rank == 1) {
          comm->abort();
          comm.reset();
          printf("LEFT\n");
          return 0;
        }
        if (!wait_lost(*comm, 1, 10000)) return 2;
        printf("BARRIER %s\n", outcome_of([&] { comm_ranks::barrier(*comm); }).c_str());
        return 0;
      },
      30000);
  cr_expect_eq(ranks[1].exit_code, 0, "%s", outputs(ranks).c_str());
  cr_expect(contains(ranks[1].output, "LEFT\n"), "%s", outputs(ranks).c_str());
  cr_expect_eq(ranks[0].exit_code, 0, "%s", outputs(ranks).c_str());
  std::string refused = line_after(ranks[0].output, "BARRIER ");
  cr_expect(contains(refused, "rank 1 (host ") && contains(refused, "aborted its communicator"), "%s",
            outputs(ranks).c_str());
}
