// Comm::shrink (runtime/comm/shrink.cc), MPIX_Comm_shrink through the store: a world
// of one; a rank that aborted its communicator, which is out; forked ranks that
// shrink to the survivors of a killed rank, in the order of their old ranks, and go
// on there; and a live rank that never calls shrink, which makes the others time out
// naming it.
#include <signal.h>

#include "tests/runtime/comm/comm_ranks.h"
#include "tests/runtime/store/store_test.h"

using comm_ranks::line_after;
using comm_ranks::outcome_of;
using comm_ranks::outputs;
using store_test::contains;

Test(shrink, world_of_one, .timeout = 30) {
  auto world = comm_ranks::solo();
  auto first = world->shrink();
  cr_assert(first != nullptr);
  cr_expect_eq(first->describe(), "comm \"world.shrink0\" (rank 0 of 1)");
  cr_expect_eq(comm_ranks::all_reduce_sum(*first, 3), 3);
  auto second = world->shrink();
  cr_expect_eq(second->describe(), "comm \"world.shrink1\" (rank 0 of 1)", "each shrink has its number");
  cr_expect_eq(comm_ranks::all_reduce_sum(*first, 4), 4, "the first goes on beside the second");
}

// tutti.h says shrink works on a comm that failed or was aborted. Not on the rank that
// aborted it: the abort closed its connection, which the store watched, so the store
// declared that rank lost, and its shrink is refused as any lost rank's is, saying
// why. A comm that failed, its peer lost, does shrink: see the kill below.
Test(shrink, rank_that_aborted_is_out, .timeout = 30) {
  auto world = comm_ranks::solo();
  world->abort();
  std::string refused = outcome_of([&] { world->shrink(); });
  cr_expect_eq(refused,
               "PEER_LOST tutti_comm_shrink: comm \"world\" (rank 0 of 1) was declared lost by the rendezvous store "
               "(comm \"world\" (rank 0 of 1) was aborted (tutti_comm_abort)), so the survivors go on without it; "
               "this process should exit");
}

// Rank 1 of 3 is killed; ranks 0 and 2 shrink to a world of two in which they are
// ranks 0 and 1, and reduce there, while the old world refuses calls.
Test(shrink, survivors_of_a_kill_go_on_in_their_old_order, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        comm_ranks::barrier(*world);
        if (rank == 1) raise(SIGKILL);
        if (!store_test::eventually([&] { return !world->lost_ranks().empty(); }, 10000)) return 2;
        auto survivors = world->shrink();
        printf("SHRUNK %s, rank %d of %d\n", survivors->name().c_str(), survivors->rank(), survivors->size());
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*survivors, rank));
        printf("OLD %s\n", outcome_of([&] { comm_ranks::barrier(*world); }).substr(0, 9).c_str());
        survivors.reset();
        world.reset();
        return 0;
      },
      40000);
  cr_expect_eq(ranks[1].signal, SIGKILL, "%s", outputs(ranks).c_str());
  for (int rank : {0, 2}) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "SHRUNK "), tutti::concat("world.shrink0, rank ", rank / 2, " of 2"), "%s",
                 outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "SUM "), "2", "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "OLD "), "PEER_LOST", "%s", outputs(ranks).c_str());
  }
}

// Rank 2 lives but never shrinks: ranks 0 and 1 time out after their op timeout, and
// the one that leads the shrink names rank 2. The world still works afterwards.
Test(shrink, live_rank_that_never_calls_is_named, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        if (rank < 2) {
          world->set_op_timeout(1000);
          printf("SHRINK %s\n", outcome_of([&] { world->shrink(); }).c_str());
          world->set_op_timeout(tt_timeout_ms(20000));
        }
        printf("BARRIER %s\n", outcome_of([&] { comm_ranks::barrier(*world); }).c_str());
        return 0;
      },
      40000);
  int named = 0;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "BARRIER "), "OK", "rank %d: %s", rank, out.c_str());
    if (rank == 2) continue;
    std::string shrink = line_after(out, "SHRINK ");
    cr_expect_eq(
        shrink.rfind(tutti::concat("TIMEOUT tutti_comm_shrink: timed out after 1000 ms on comm \"world\" (rank ", rank,
                                   " of 3)"),
                     0),
        0u, "rank %d: %s", rank, out.c_str());
    named += contains(shrink,
                      ": ranks 2 neither called it nor were declared lost; every rank still alive must call "
                      "tutti_comm_shrink (or raise op_timeout_ms)");
  }
  cr_expect_eq(named, 1, "the leader names rank 2, the other waits for the leader:\n%s", outputs(ranks).c_str());
}
