// Comm::grow and Comm::join (runtime/comm/grow.cc, rendezvous/admission.cc): forked
// ranks grow a world by 1 and by 2, and forked joiners join it; ranks keep their
// numbers, joiners take the next ones, and collectives run on the result through shared
// memory. A kill, a shrink and a grow back. And each way a grow fails: a joiner that
// never comes, a rank that never calls it or dies during it, counts that differ, a
// joiner for a job that does not grow or without the job's secret: each a clear error
// where it was made, the old world usable.
#include <signal.h>

#include <chrono>
#include <set>
#include <thread>

#include "tests/runtime/comm/comm_ranks.h"
#include "tests/runtime/store/store_test.h"

using comm_ranks::line_after;
using comm_ranks::outcome_of;
using comm_ranks::outputs;
using store_test::contains;

namespace {

// A joiner of the world whose rank 0 serves the store at port.
tutti::comm::Options joiner_options(int port) {
  tutti::comm::Options options = comm_ranks::options(-1, -1, port);
  options.request.rank = -1;
  options.request.world_size = -1;
  return options;
}

// members ranks grow by joiners; the forked processes past them join. Each prints
// where it ended up and a sum over the grown world, which holds every rank's number:
// size * (size - 1) / 2.
void grow_and_reduce(int members, int joiners) {
  const int size = members + joiners;
  auto ranks = comm_ranks::run(
      size,
      [members, joiners](int rank, int port) {
        std::unique_ptr<tutti::comm::Comm> grown;
        std::unique_ptr<tutti::comm::Comm> world;
        if (rank < members) {
          world = tutti::comm::Comm::init(comm_ranks::options(rank, members, port));
          grown = world->grow(joiners);
        } else {
          grown = tutti::comm::Comm::join(joiner_options(port));
        }
        printf("GROWN %s %d of %d\n", grown->name().c_str(), grown->rank(), grown->size());
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, grown->rank()));
        // The last rank, a joiner, broadcasts: data leaves a new rank as well as reaching it.
        printf("FROM LAST %d\n", comm_ranks::broadcast(*grown, grown->rank() * 10, grown->size() - 1));
        if (world) printf("OLD STILL %d\n", comm_ranks::all_reduce_sum(*world, 1));
        grown.reset();
        world.reset();
        return 0;
      },
      60000);
  std::set<int> joiner_ranks;
  for (int rank = 0; rank < size; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    std::string grown = line_after(out, "GROWN ");
    int new_rank = -1;
    cr_expect_eq(sscanf(grown.c_str(), "world.grow0 %d of", &new_rank), 1, "rank %d: %s", rank, out.c_str());
    cr_expect(contains(grown, tutti::concat(" of ", size)), "rank %d: %s", rank, out.c_str());
    if (rank < members) {
      cr_expect_eq(new_rank, rank, "a member keeps its rank: %s", out.c_str());
      cr_expect_eq(line_after(out, "OLD STILL "), tutti::concat(members), "the old world goes on: %s", out.c_str());
    } else {
      joiner_ranks.insert(new_rank);
    }
    cr_expect_eq(line_after(out, "SUM "), tutti::concat(size * (size - 1) / 2), "rank %d: %s", rank, out.c_str());
    cr_expect_eq(line_after(out, "FROM LAST "), tutti::concat((size - 1) * 10), "rank %d: %s", rank, out.c_str());
  }
  std::set<int> expected;
  for (int rank = members; rank < size; ++rank) expected.insert(rank);
  cr_expect(joiner_ranks == expected, "joiners take the next numbers:\n%s", outputs(ranks).c_str());
}

}  // namespace

Test(grow, two_ranks_by_one, .timeout = 90) { grow_and_reduce(2, 1); }
Test(grow, three_ranks_by_two, .timeout = 90) { grow_and_reduce(3, 2); }
Test(grow, one_rank_by_one, .timeout = 90) { grow_and_reduce(1, 1); }

// Rank 1 of 3 is killed; the survivors shrink to two, and grow back to three with a
// joiner (as tutti launch --restart would start it), which becomes rank 2.
Test(grow, kill_shrink_grow_back, .timeout = 90) {
  auto ranks = comm_ranks::run(
      4,
      [](int rank, int port) {
        if (rank == 3) {
          auto grown = tutti::comm::Comm::join(joiner_options(port));
          printf("JOINED %d of %d\n", grown->rank(), grown->size());
          printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, 100));
          return 0;
        }
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        comm_ranks::barrier(*world);
        if (rank == 1) raise(SIGKILL);
        if (!store_test::eventually([&] { return !world->lost_ranks().empty(); }, 10000)) return 2;
        auto survivors = world->shrink();
        auto grown = survivors->grow(1);
        printf("GROWN %s %d of %d\n", grown->name().c_str(), grown->rank(), grown->size());
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, rank));
        grown.reset();
        survivors.reset();
        world.reset();
        return 0;
      },
      60000);
  cr_expect_eq(ranks[1].signal, SIGKILL, "%s", outputs(ranks).c_str());
  for (int rank : {0, 2, 3}) cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[0].output, "GROWN "), "world.shrink0.grow0 0 of 3", "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[2].output, "GROWN "), "world.shrink0.grow0 1 of 3", "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[3].output, "JOINED "), "2 of 3", "%s", outputs(ranks).c_str());
  for (int rank : {0, 2, 3}) cr_expect_eq(line_after(ranks[rank].output, "SUM "), "102", "%s", outputs(ranks).c_str());
}

// No joiner comes: every rank fails after its op timeout with rank 0's reason, and
// the world still works.
Test(grow, joiner_that_never_comes, .timeout = 60) {
  auto ranks = comm_ranks::run(
      2,
      [](int rank, int port) {
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 2, port));
        world->set_op_timeout(1000);
        printf("GROW %s\n", outcome_of([&] { world->grow(1); }).c_str());
        world->set_op_timeout(tt_timeout_ms(20000));
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*world, 1));
        return 0;
      },
      40000);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "GROW "),
                 tutti::concat("TIMEOUT tutti_comm_grow: the grow failed, seen from comm \"world\" (rank ", rank,
                               " of 2): timed out after 1000 ms waiting for the joiners: 0 of the 1 joiners came; "
                               "start them (tutti_comm_join, or tutti launch --restart), or raise op_timeout_ms"),
                 "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "SUM "), "2", "%s", outputs(ranks).c_str());
  }
}

// Rank 2 never grows: ranks 0 and 1 fail naming it; the ticket no joiner took is left
// for a later grow; the world still works.
Test(grow, rank_that_never_calls_is_named, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        if (rank < 2) {
          world->set_op_timeout(1000);
          printf("GROW %s\n", outcome_of([&] { world->grow(1); }).c_str());
          world->set_op_timeout(tt_timeout_ms(20000));
        }
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*world, 1));
        return 0;
      },
      40000);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "SUM "), "3", "%s", outputs(ranks).c_str());
    if (rank == 2) continue;
    cr_expect_eq(line_after(out, "GROW "),
                 tutti::concat("TIMEOUT tutti_comm_grow: the grow failed, seen from comm \"world\" (rank ", rank,
                               " of 3): ranks 2 of comm \"world\" (rank 0 of 3) never called tutti_comm_grow (within "
                               "1000 ms); every rank must call it, with the same count"),
                 "%s", outputs(ranks).c_str());
  }
}

// Ranks asking for different counts: a MISMATCH on both, naming the counts; no joiner
// is admitted, and the one waiting is admitted by the grow that follows.
Test(grow, counts_that_differ, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        if (rank == 2) {
          auto grown = tutti::comm::Comm::join(joiner_options(port));
          printf("JOINED %d of %d\n", grown->rank(), grown->size());
          printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, 1));
          return 0;
        }
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 2, port));
        printf("GROW %s\n", outcome_of([&] { world->grow(rank + 1); }).c_str());
        auto grown = world->grow(1);
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, 1));
        return 0;
      },
      40000);
  for (int rank = 0; rank < 3; ++rank) {
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(ranks[rank].output, "SUM "), "3", "%s", outputs(ranks).c_str());
  }
  cr_expect_eq(line_after(ranks[2].output, "JOINED "), "2 of 3", "%s", outputs(ranks).c_str());
  for (int rank = 0; rank < 2; ++rank) {
    cr_expect_eq(line_after(ranks[rank].output, "GROW "),
                 tutti::concat("MISMATCH tutti_comm_grow: the grow failed, seen from comm \"world\" (rank ", rank,
                               " of 2): rank 1 of comm \"world\" (rank 0 of 2) asked to grow by 2 and rank 0 by 1; "
                               "every rank must pass the same count"),
                 "%s", outputs(ranks).c_str());
  }
}

// A joiner for a job that never grows times out with what to do; the job's ranks are
// unharmed.
Test(grow, joiner_for_a_job_that_does_not_grow, .timeout = 60) {
  auto ranks = comm_ranks::run(
      2,
      [](int rank, int port) {
        if (rank == 1) {
          tutti::comm::Options options = joiner_options(port);
          options.init_timeout_ms = tt_timeout_ms(2000);
          printf("JOIN %s\n", outcome_of([&] { tutti::comm::Comm::join(options); }).c_str());
          return 0;
        }
        auto world = tutti::comm::Comm::init(comm_ranks::options(0, 1, port));
        // Serves the store until the joiner has given up.
        std::this_thread::sleep_for(std::chrono::milliseconds(tt_timeout_ms(5000)));
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*world, 1));
        return 0;
      },
      40000);
  for (int rank = 0; rank < 2; ++rank) cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[0].output, "SUM "), "1", "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[1].output, "JOIN "),
               "TIMEOUT tutti_comm_join: no communicator grew to admit this process (joiner #1 of the job): the "
               "job's ranks must call tutti_comm_grow, one more rank for each joiner, before init_timeout_ms passes "
               "here",
               "%s", outputs(ranks).c_str());
}

Test(grow, count_out_of_range, .timeout = 30) {
  auto world = comm_ranks::solo();
  cr_expect_eq(outcome_of([&] { world->grow(0); }),
               "INVALID_ARGUMENT tutti_comm_grow: count 0 on comm \"world\" (rank 0 of 1) is out of range; pass how "
               "many ranks to add, 1 to 1048576");
  cr_expect_eq(comm_ranks::all_reduce_sum(*world, 5), 5);
}

// A joiner without the job's secret is denied by the store, and says so; the job's
// rank is unharmed.
Test(grow, joiner_with_a_wrong_secret, .timeout = 60) {
  auto ranks = comm_ranks::run(
      2,
      [](int rank, int port) {
        setenv("TUTTI_SECRET", rank == 0 ? "5ec2e75ec2e75ec2" : "0000000000000000", 1);
        if (rank == 1) {
          tutti::comm::Options options = joiner_options(port);
          options.init_timeout_ms = tt_timeout_ms(3000);
          std::string joined = outcome_of([&] { tutti::comm::Comm::join(options); });
          printf("JOIN %s\n", joined.substr(0, joined.find(':')).c_str());
          printf("SAYS SECRET %d\n", contains(joined, "TUTTI_SECRET") ? 1 : 0);
          return 0;
        }
        auto world = tutti::comm::Comm::init(comm_ranks::options(0, 1, port));
        std::this_thread::sleep_for(std::chrono::milliseconds(tt_timeout_ms(4000)));
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*world, 1));
        return 0;
      },
      40000);
  for (int rank = 0; rank < 2; ++rank) cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[0].output, "SUM "), "1", "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[1].output, "JOIN "), "DENIED tutti_comm_join", "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[1].output, "SAYS SECRET "), "1", "%s", outputs(ranks).c_str());
}

// Rank 2 of 3 dies as the others grow: their grow fails with PEER_LOST naming it
// (the comm was found unusable, or rank 0 saw it lost while it waited), no joiner is
// admitted, and the survivors shrink and grow again, which admits the joiner waiting.
Test(grow, member_lost_during_the_grow, .timeout = 90) {
  auto ranks = comm_ranks::run(
      4,
      [](int rank, int port) {
        if (rank == 3) {
          auto grown = tutti::comm::Comm::join(joiner_options(port));
          printf("JOINED %d of %d\n", grown->rank(), grown->size());
          printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, 1));
          return 0;
        }
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        comm_ranks::barrier(*world);
        if (rank == 2) raise(SIGKILL);
        std::string failed = outcome_of([&] { world->grow(1); });
        printf("GROW %s\n", failed.substr(0, failed.find(' ')).c_str());
        printf("NAMES RANK 2 %d\n", contains(failed, "rank 2") || contains(failed, "ranks 2") ? 1 : 0);
        auto survivors = world->shrink();
        auto grown = survivors->grow(1);
        printf("GROWN %d of %d\n", grown->rank(), grown->size());
        printf("SUM %d\n", comm_ranks::all_reduce_sum(*grown, 1));
        return 0;
      },
      60000);
  cr_expect_eq(ranks[2].signal, SIGKILL, "%s", outputs(ranks).c_str());
  for (int rank : {0, 1}) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "GROW "), "PEER_LOST", "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "NAMES RANK 2 "), "1", "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "GROWN "), tutti::concat(rank, " of 3"), "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "SUM "), "3", "%s", outputs(ranks).c_str());
  }
  cr_expect_eq(ranks[3].exit_code, 0, "%s", outputs(ranks).c_str());
  cr_expect_eq(line_after(ranks[3].output, "JOINED "), "2 of 3", "%s", outputs(ranks).c_str());
}
