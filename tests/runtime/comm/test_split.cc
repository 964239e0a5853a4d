// Comm::split (runtime/comm/split.cc), MPI_Comm_split through the store: a world of
// one, and forked ranks where the colors make groups, the keys order them with ties
// broken by the old rank, a rank passing -1 joins none, and a rank that never calls
// split makes the others time out naming it, with their world still usable.
#include "tests/runtime/comm/comm_ranks.h"

using comm_ranks::line_after;
using comm_ranks::outcome_of;
using comm_ranks::outputs;

namespace {

// "rank R of N, NAME, SUM": where rank sits in sub, and the sum of value over it.
std::string place_in(tutti::comm::Comm* sub, int value) {
  if (sub == nullptr) return "none";
  return tutti::concat("rank ", sub->rank(), " of ", sub->size(), ", ", sub->name(), ", ",
                       comm_ranks::all_reduce_sum(*sub, value));
}

}  // namespace

Test(split, world_of_one, .timeout = 30) {
  auto world = comm_ranks::solo();
  cr_expect(world->split(-1, 0) == nullptr, "color -1 (TUTTI_UNDEFINED) joins no communicator");
  auto sub = world->split(7, 3);
  cr_assert(sub != nullptr);
  cr_expect(sub->rank() == 0 && sub->size() == 1);
  cr_expect_eq(sub->describe(), "comm \"world.split1.color7\" (rank 0 of 1)", "each split has its number");
  cr_expect_eq(comm_ranks::all_reduce_sum(*sub, 5), 5);
  cr_expect(sub->dump().find("\n  #1 all_reduce int32 x 1 sum: done in ") != std::string::npos, "%s",
            sub->dump().c_str());
  cr_expect(world->dump().find("all_reduce") == std::string::npos, "the world ran nothing: %s", world->dump().c_str());

  std::string refused = outcome_of([&] { world->split(-2, 0); });
  cr_expect_eq(refused,
               "INVALID_ARGUMENT tutti_comm_split: color -2 on comm \"world\" (rank 0 of 1) is negative; use a color "
               ">= 0, or TUTTI_UNDEFINED (-1) to join none");
}

// Four ranks split twice. First by parity with keys -rank, rank 3 joining none: the
// even ranks in reverse order, rank 1 alone. Then all together with keys that tie in
// pairs: (2, 3) before (0, 1), each pair in its old order. A broadcast from each new
// root shows who it is.
Test(split, colors_group_and_keys_order_with_ties_broken_by_rank, .timeout = 60) {
  auto ranks = comm_ranks::run(
      4,
      [](int rank, int port) {
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 4, port));
        auto halves = world->split(rank == 3 ? -1 : rank % 2, -rank);
        printf("HALF %s\n", place_in(halves.get(), rank).c_str());
        if (halves) printf("HALF ROOT %d\n", comm_ranks::broadcast(*halves, rank, 0));
        auto all = world->split(5, rank < 2 ? 1 : 0);
        printf("ALL %s\n", place_in(all.get(), rank).c_str());
        printf("ALL ROOT %d\n", comm_ranks::broadcast(*all, rank, 0));
        return 0;
      },
      40000);
  const char* const halves[] = {"rank 1 of 2, world.split0.color0, 2", "rank 0 of 1, world.split0.color1, 1",
                                "rank 0 of 2, world.split0.color0, 2", "none"};
  const char* const half_roots[] = {"2", "1", "2", ""};
  const char* const all[] = {"rank 2 of 4, world.split1.color5, 6", "rank 3 of 4, world.split1.color5, 6",
                             "rank 0 of 4, world.split1.color5, 6", "rank 1 of 4, world.split1.color5, 6"};
  for (int rank = 0; rank < 4; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "HALF "), halves[rank], "rank %d: %s", rank, out.c_str());
    cr_expect_eq(line_after(out, "HALF ROOT "), half_roots[rank], "rank %d: %s", rank, out.c_str());
    cr_expect_eq(line_after(out, "ALL "), all[rank], "rank %d: %s", rank, out.c_str());
    cr_expect_eq(line_after(out, "ALL ROOT "), "2", "rank %d: %s", rank, out.c_str());
  }
}

// Rank 2 never splits: ranks 0 and 1 time out after their op timeout, naming it, and
// the world still works for a barrier with rank 2 afterwards.
Test(split, rank_that_never_calls_is_named_and_the_world_goes_on, .timeout = 60) {
  auto ranks = comm_ranks::run(
      3,
      [](int rank, int port) {
        auto world = tutti::comm::Comm::init(comm_ranks::options(rank, 3, port));
        if (rank < 2) {
          world->set_op_timeout(1000);
          printf("SPLIT %s\n", outcome_of([&] { world->split(0, 0); }).c_str());
          world->set_op_timeout(tt_timeout_ms(20000));
        }
        printf("BARRIER %s\n", outcome_of([&] { comm_ranks::barrier(*world); }).c_str());
        return 0;
      },
      40000);
  for (int rank = 0; rank < 3; ++rank) {
    const std::string& out = ranks[rank].output;
    cr_expect_eq(ranks[rank].exit_code, 0, "%s", outputs(ranks).c_str());
    cr_expect_eq(line_after(out, "BARRIER "), "OK", "rank %d: %s", rank, out.c_str());
    if (rank == 2) continue;
    cr_expect_eq(line_after(out, "SPLIT "),
                 tutti::concat("TIMEOUT tutti_comm_split: timed out after 1000 ms on comm \"world\" (rank ", rank,
                               " of 3) (split #0): ranks 2 never called it; check that every rank calls "
                               "tutti_comm_split in the same order, or raise op_timeout_ms"),
                 "rank %d: %s", rank, out.c_str());
  }
}
