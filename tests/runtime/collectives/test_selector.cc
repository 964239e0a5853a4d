// The algorithm selector: what it picks by size and place, and its TUTTI_ALGO override.
#include <criterion/criterion.h>

#include <cstdlib>
#include <string>

#include "runtime/collectives/selector.h"
#include "runtime/common/error.h"

using namespace tutti::collectives;
using tutti::Kind;
using tutti::collectives::HierarchyShape;
constexpr HierarchyShape kNone = HierarchyShape::kNone;
constexpr HierarchyShape kInPlace = HierarchyShape::kInPlace;
constexpr HierarchyShape kReordering = HierarchyShape::kReordering;
constexpr HierarchyShape kLeaders = HierarchyShape::kLeaders;

namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

std::string forced_error(const char* value) {
  setenv("TUTTI_ALGO", value, 1);
  try {
    Selector::from_environment();
  } catch (const tutti::Error& error) {
    return error.what();
  }
  cr_assert_fail("TUTTI_ALGO=%s was accepted", value);
  return "";
}

}  // namespace

Test(selector, picks_shared_memory_on_one_node_and_by_size_elsewhere, .timeout = 10) {
  unsetenv("TUTTI_ALGO");
  Selector selector = Selector::from_environment();
  cr_assert(selector.choose(Kind::kAllReduce, 8, 4, true, kNone) == Algorithm::kShm);
  cr_assert(selector.choose(Kind::kAllReduce, 8, 4, false, kNone) == Algorithm::kRecursiveDoubling);
  cr_assert(selector.choose(Kind::kAllReduce, 16 << 20, 4, false, kNone) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kBarrier, 0, 4, false, kNone) == Algorithm::kDissemination);
  cr_assert(selector.choose(Kind::kSend, 8, 4, true, kNone) == Algorithm::kDirect);
  // Several nodes alike: all_reduce and broadcast take the hierarchy at every size;
  // all_gather and reduce_scatter up to kHierarchicalBlockBytes a rank.
  for (Kind kind : {Kind::kAllReduce, Kind::kBroadcast}) {
    for (size_t bytes : {size_t{8}, tutti::collectives::kSmallMessageBytes, size_t{16} << 20}) {
      cr_assert(selector.choose(kind, bytes, 8, false, kInPlace) == Algorithm::kHierarchical);
    }
  }
  // A reordering one (ranks not numbered node by node): up to kHierarchicalBlockBytes
  // a rank; an in-place one at every size.
  for (Kind kind : {Kind::kAllGather, Kind::kReduceScatter}) {
    cr_assert(selector.choose(kind, 8, 8, false, kReordering) == Algorithm::kHierarchical);
    cr_assert(selector.choose(kind, tutti::collectives::kHierarchicalBlockBytes, 8, false, kReordering) ==
              Algorithm::kHierarchical);
    cr_assert(selector.choose(kind, tutti::collectives::kHierarchicalBlockBytes + 1, 8, false, kReordering) ==
              Algorithm::kRing);
    for (size_t bytes : {size_t{8}, tutti::collectives::kHierarchicalBlockBytes + 1, size_t{64} << 20}) {
      cr_assert(selector.choose(kind, bytes, 8, false, kInPlace) == Algorithm::kHierarchical);
    }
  }
  // reduce, gather, scatter, barrier and all_to_all have hierarchical forms that only
  // TUTTI_ALGO takes where ranks share cores (selector.cc says why; the default).
  for (HierarchyShape shape : {kInPlace, kReordering}) {
    cr_assert(selector.choose(Kind::kReduce, 8, 8, false, shape) == Algorithm::kBinomial);
    cr_assert(selector.choose(Kind::kGather, 16 << 20, 8, false, shape) == Algorithm::kLinear);
    cr_assert(selector.choose(Kind::kScatter, 8, 8, false, shape) == Algorithm::kBinomial);
    cr_assert(selector.choose(Kind::kBarrier, 0, 8, false, shape) == Algorithm::kDissemination);
    cr_assert(selector.choose(Kind::kAllToAll, 8, 8, false, shape) == Algorithm::kLinear);
  }
  cr_assert(selector.choose(Kind::kReduce, 16 << 20, 8, false, kNone) == Algorithm::kRing);
  // At 2 ranks a binomial tree's one message at every size.
  cr_assert(selector.choose(Kind::kReduce, 16 << 20, 2, false, kNone) == Algorithm::kBinomial);
  cr_assert(flat_choice(Kind::kReduce, kSmallMessageBytes + 1, 2) == Algorithm::kBinomial);
  // Nodes of different sizes: through the leaders only where forced (below); the flat
  // algorithms by default.
  cr_assert(selector.choose(Kind::kAllReduce, 8, 5, false, kLeaders) == Algorithm::kRecursiveDoubling);
  cr_assert(selector.choose(Kind::kBarrier, 0, 5, false, kLeaders) == Algorithm::kDissemination);
  cr_assert(selector.choose(Kind::kAllGather, 8, 5, false, kLeaders) == Algorithm::kBruck);
  cr_assert(selector.choose(Kind::kReduceScatter, 8, 6, false, kLeaders) == Algorithm::kRecursiveHalving);
  cr_assert(selector.choose(Kind::kGather, 8, 5, false, kLeaders) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kReduceScatter, 16 << 20, 5, false, kLeaders) == Algorithm::kRing);
  // all_to_all: every message at once up to kSmallMessageBytes a peer, one peer a
  // step past it.
  cr_assert(selector.choose(Kind::kAllToAll, 8, 8, false, kNone) == Algorithm::kLinear);
  cr_assert(selector.choose(Kind::kAllToAll, kSmallMessageBytes, 8, false, kNone) == Algorithm::kLinear);
  cr_assert(selector.choose(Kind::kAllToAll, kSmallMessageBytes + 1, 8, false, kNone) == Algorithm::kPairwise);
  // all_to_allv has no shared-memory form: over the transport everywhere, linear up to
  // kSmallMessageBytes a peer on average (its bytes are all this rank sends), pairwise
  // past it.
  for (bool shm : {true, false}) {
    for (HierarchyShape hierarchy : {kNone, kInPlace, kReordering}) {
      cr_assert(selector.choose(Kind::kAllToAllV, 4 * tutti::collectives::kSmallMessageBytes, 4, shm, hierarchy) ==
                Algorithm::kLinear);
      cr_assert(selector.choose(Kind::kAllToAllV, 4 * tutti::collectives::kSmallMessageBytes + 4, 4, shm, hierarchy) ==
                Algorithm::kPairwise);
    }
  }
  // Small all_gather and reduce_scatter: the recursive forms where they take fewer
  // steps (recursive doubling: a power of two of ranks; recursive halving: 4 ranks,
  // and 6 up, where pairwise takes P - 1 steps); the rings past kSmallMessageBytes.
  for (int size : {2, 4, 8, 16}) {
    cr_assert(selector.choose(Kind::kAllGather, 8, size, false, kNone) == Algorithm::kRecursiveDoubling);
    cr_assert(flat_choice(Kind::kAllGather, 8, size) == Algorithm::kRecursiveDoubling);
  }
  for (int size : {3, 5, 6, 7, 12}) {
    cr_assert(selector.choose(Kind::kAllGather, 8, size, false, kNone) == Algorithm::kBruck);
    cr_assert(flat_choice(Kind::kAllGather, 8, size) == Algorithm::kBruck);
  }
  for (int size : {4, 6, 7, 8, 12, 16}) {
    cr_assert(selector.choose(Kind::kReduceScatter, 8, size, false, kNone) == Algorithm::kRecursiveHalving);
    cr_assert(flat_choice(Kind::kReduceScatter, 8, size) == Algorithm::kRecursiveHalving, "%d ranks", size);
  }
  for (int size : {2, 3, 5}) {
    cr_assert(selector.choose(Kind::kReduceScatter, 8, size, false, kNone) == Algorithm::kPairwise);
    cr_assert(flat_choice(Kind::kReduceScatter, 8, size) == Algorithm::kPairwise, "%d ranks", size);
  }
  cr_assert(selector.choose(Kind::kReduceScatter, kSmallMessageBytes + 1, 4, false, kNone) == Algorithm::kRing);
  // all_gather keeps recursive doubling up to kRecursiveAllGatherBytes a rank on a
  // power of two of ranks; the ring beyond it, and past kSmallMessageBytes elsewhere.
  cr_assert(selector.choose(Kind::kAllGather, kRecursiveAllGatherBytes, 4, false, kNone) ==
            Algorithm::kRecursiveDoubling);
  cr_assert(selector.choose(Kind::kAllGather, kRecursiveAllGatherBytes + 1, 4, false, kNone) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kAllGather, kSmallMessageBytes + 1, 6, false, kNone) == Algorithm::kRing);
  // all_reduce past kSmallMessageBytes: Rabenseifner's on 4, 8, 16 ranks up to
  // kRabenseifnerBytes, the ring beyond it and on other rank counts.
  const size_t above_small = tutti::collectives::kSmallMessageBytes + 4;
  for (int size : {4, 8, 16}) {
    cr_assert(selector.choose(Kind::kAllReduce, above_small, size, false, kNone) == Algorithm::kRabenseifner);
    cr_assert(selector.choose(Kind::kAllReduce, kRabenseifnerBytes, size, false, kNone) == Algorithm::kRabenseifner);
    cr_assert(selector.choose(Kind::kAllReduce, kRabenseifnerBytes + 4, size, false, kNone) == Algorithm::kRing);
    cr_assert(selector.choose(Kind::kAllReduce, kSmallMessageBytes, size, false, kNone) ==
              Algorithm::kRecursiveDoubling);
  }
  for (int size : {3, 5, 6, 12}) {
    cr_assert(selector.choose(Kind::kAllReduce, above_small, size, false, kNone) == Algorithm::kRing, "%d", size);
  }
  // A communicator of 2 ranks keeps recursive doubling up to kTwoRankDoublingBytes, the
  // ring beyond it; a hierarchy's step between 2 nodes (flat_choice) takes the ring
  // past kSmallMessageBytes.
  cr_assert(selector.choose(Kind::kAllReduce, above_small, 2, false, kNone) == Algorithm::kRecursiveDoubling);
  cr_assert(selector.choose(Kind::kAllReduce, kTwoRankDoublingBytes, 2, false, kNone) == Algorithm::kRecursiveDoubling);
  cr_assert(flat_choice(Kind::kAllReduce, above_small, 2) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kAllReduce, kTwoRankDoublingBytes + 4, 2, false, kNone) == Algorithm::kRing);
  // Broadcast keeps its binomial tree below 8 ranks, whatever the size.
  cr_assert(selector.choose(Kind::kBroadcast, 16 << 20, 7, false, kNone) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kBroadcast, 16 << 20, 8, false, kNone) == Algorithm::kScatterAllGather);
  cr_assert(selector.choose(Kind::kBroadcast, 8, 8, false, kNone) == Algorithm::kBinomial);
}

// With a CPU per rank, the forms that win only then: barrier; reduce up to a
// kHierarchicalArrayBytes vector; gather, scatter and all_to_all up to a
// kHierarchicalArrayBytes array (every rank's block); and through the leaders,
// barrier, and all_reduce and broadcast up to kHierarchicalArrayBytes. The rest as
// without.
Test(selector, takes_more_hierarchical_forms_where_each_rank_has_a_core, .timeout = 10) {
  unsetenv("TUTTI_ALGO");
  const Selector selector = Selector::from_environment();
  constexpr bool kCorePerRank = true;
  const size_t array = tutti::collectives::kHierarchicalArrayBytes;
  for (HierarchyShape shape : {kInPlace, kReordering}) {
    for (size_t bytes : {size_t{8}, array, size_t{16} << 20}) {
      cr_assert(selector.choose(Kind::kAllReduce, bytes, 16, false, shape, kCorePerRank) == Algorithm::kHierarchical);
    }
    cr_assert(selector.choose(Kind::kBarrier, 0, 16, false, shape, kCorePerRank) == Algorithm::kHierarchical);
    cr_assert(selector.choose(Kind::kReduce, array, 16, false, shape, kCorePerRank) == Algorithm::kHierarchical);
    cr_assert(selector.choose(Kind::kReduce, array + 4, 16, false, shape, kCorePerRank) != Algorithm::kHierarchical);
    for (Kind kind : {Kind::kGather, Kind::kScatter, Kind::kAllToAll}) {
      cr_assert(selector.choose(kind, array / 16, 16, false, shape, kCorePerRank) == Algorithm::kHierarchical);
      cr_assert(selector.choose(kind, array / 16 + 1, 16, false, shape, kCorePerRank) != Algorithm::kHierarchical);
      cr_assert(selector.choose(kind, array / 8, 8, false, shape, kCorePerRank) == Algorithm::kHierarchical);
    }
    // Shared memory on one node still comes first.
    cr_assert(selector.choose(Kind::kScatter, 8, 16, true, shape, kCorePerRank) == Algorithm::kShm);
  }
  for (Kind kind : {Kind::kAllReduce, Kind::kBroadcast}) {
    cr_assert(selector.choose(kind, 8, 7, false, kLeaders, kCorePerRank) == Algorithm::kHierarchical);
    cr_assert(selector.choose(kind, array, 7, false, kLeaders, kCorePerRank) == Algorithm::kHierarchical);
    cr_assert(selector.choose(kind, array + 4, 7, false, kLeaders, kCorePerRank) != Algorithm::kHierarchical);
  }
  for (size_t bytes : {size_t{8}, size_t{16} << 20}) {
    cr_assert(selector.choose(Kind::kReduce, bytes, 7, false, kLeaders, kCorePerRank) != Algorithm::kHierarchical);
  }
  cr_assert(selector.choose(Kind::kBarrier, 0, 7, false, kLeaders, kCorePerRank) == Algorithm::kHierarchical);
  // Without a hierarchy there is nothing to take.
  cr_assert(selector.choose(Kind::kScatter, 8, 16, false, kNone, kCorePerRank) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kBarrier, 0, 16, false, kNone, kCorePerRank) == Algorithm::kDissemination);
}

Test(selector, tutti_algo_forces_a_choice, .timeout = 10) {
  setenv("TUTTI_ALGO", "all_reduce=ring,broadcast=binomial", 1);
  Selector selector = Selector::from_environment();
  cr_assert(selector.choose(Kind::kAllReduce, 8, 4, true, kNone) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kBroadcast, 1 << 24, 4, true, kNone) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kAllGather, 8, 4, true, kNone) == Algorithm::kShm);
  setenv("TUTTI_ALGO", "all_gather=recursive_doubling,reduce_scatter=recursive_halving,all_reduce=rabenseifner", 1);
  cr_assert(Selector::from_environment().choose(Kind::kAllReduce, 8, 3, false, kNone) == Algorithm::kRabenseifner);
  cr_assert(Selector::from_environment().choose(Kind::kAllGather, 1 << 24, 3, false, kNone) ==
            Algorithm::kRecursiveDoubling);
  cr_assert(Selector::from_environment().choose(Kind::kReduceScatter, 1 << 24, 3, false, kNone) ==
            Algorithm::kRecursiveHalving);
  setenv("TUTTI_ALGO", "all_reduce=shm", 1);
  // One rank has nobody to share memory with: forcing shm there is not an error.
  cr_assert(Selector::from_environment().choose(Kind::kAllReduce, 8, 1, false, kNone) != Algorithm::kShm);
  try {
    Selector::from_environment().choose(Kind::kAllReduce, 8, 4, false, kNone);
    cr_assert_fail("shm was chosen without a shared-memory group");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kUnsupported);
  }
  setenv("TUTTI_ALGO",
         "all_reduce=hierarchical,all_gather=hierarchical,reduce_scatter=hierarchical,broadcast=hierarchical,"
         "reduce=hierarchical,gather=hierarchical,scatter=hierarchical,barrier=hierarchical,all_to_all=hierarchical",
         1);
  for (Kind kind : {Kind::kAllReduce, Kind::kAllGather, Kind::kReduceScatter, Kind::kBroadcast, Kind::kReduce,
                    Kind::kGather, Kind::kScatter, Kind::kBarrier, Kind::kAllToAll}) {
    cr_assert(Selector::from_environment().choose(kind, 16 << 20, 4, false, kInPlace) == Algorithm::kHierarchical);
  }
  try {
    Selector::from_environment().choose(Kind::kAllReduce, 8, 4, false, kNone);
    cr_assert_fail("hierarchical was chosen without a hierarchy");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kUnsupported);
    cr_assert(contains(error.what(), "two or more ranks on some"), "%s", error.what());
  }
  // Nodes of different sizes: all_reduce, broadcast, reduce and barrier only.
  for (Kind kind : {Kind::kAllReduce, Kind::kBroadcast, Kind::kReduce, Kind::kBarrier}) {
    cr_assert(Selector::from_environment().choose(kind, 8, 5, false, kLeaders) == Algorithm::kHierarchical);
  }
  try {
    Selector::from_environment().choose(Kind::kAllGather, 8, 5, false, kLeaders);
    cr_assert_fail("hierarchical all_gather was chosen on nodes of different sizes");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kUnsupported);
    cr_assert(contains(error.what(), "nodes of different sizes"), "%s", error.what());
  }
  unsetenv("TUTTI_ALGO");
}

Test(selector, tutti_algo_errors_name_the_choices, .timeout = 10) {
  cr_assert(contains(forced_error("all_reduce=bruck"), "all_reduce: shm recursive_doubling ring hierarchical"));
  cr_assert(contains(forced_error("reduce=bruck"), "reduce: shm binomial ring hierarchical"));
  cr_assert(contains(forced_error("all_to_all=ring"), "all_to_all: shm pairwise linear hierarchical"));
  cr_assert(contains(forced_error("all_to_allv=hierarchical"), "all_to_allv: linear pairwise"));
  cr_assert(contains(forced_error("allreduce=ring"), "not a collective"));
  cr_assert(contains(forced_error("ring"), "collective=algorithm"));
  cr_assert(contains(forced_error("send=direct"), "not a collective"));
  cr_assert(contains(forced_error("all_to_allv=shm"), "all_to_allv: linear pairwise"));
}
