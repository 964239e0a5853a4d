#include "runtime/collectives/selector.h"

#include <bit>
#include <span>
#include <sstream>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/settings.h"

namespace tutti::collectives {
namespace {

constexpr const char* kAlgorithmNames[] = {
    "shm",         "ring",   "recursive_doubling", "binomial", "scatter_all_gather", "bruck",
    "pairwise",    "linear", "dissemination",      "direct",   "hierarchical",       "recursive_halving",
    "rabenseifner"};

// The algorithms that implement each collective: shared memory, the default choice for
// small messages, the one for large messages, then the others (flat_choice says when
// it takes those). Static tables: choose() runs on every call.
std::span<const Algorithm> implemented(Kind kind) {
  using A = Algorithm;
  static constexpr A kAllReduce[] = {A::kShm, A::kRecursiveDoubling, A::kRing, A::kHierarchical, A::kRabenseifner};
  static constexpr A kReduce[] = {A::kShm, A::kBinomial, A::kRing, A::kHierarchical};
  static constexpr A kBroadcast[] = {A::kShm, A::kBinomial, A::kScatterAllGather, A::kHierarchical};
  static constexpr A kAllGather[] = {A::kShm, A::kBruck, A::kRing, A::kHierarchical, A::kRecursiveDoubling};
  static constexpr A kReduceScatter[] = {A::kShm, A::kPairwise, A::kRing, A::kHierarchical, A::kRecursiveHalving};
  static constexpr A kRooted[] = {A::kShm, A::kBinomial, A::kLinear, A::kHierarchical};
  static constexpr A kAllToAll[] = {A::kShm, A::kPairwise, A::kLinear, A::kHierarchical};
  static constexpr A kAllToAllV[] = {A::kLinear, A::kPairwise};
  static constexpr A kBarrier[] = {A::kShm, A::kDissemination, A::kHierarchical};
  static constexpr A kPointToPoint[] = {A::kDirect};
  switch (kind) {
    case Kind::kAllReduce: return kAllReduce;
    case Kind::kReduce: return kReduce;
    case Kind::kBroadcast: return kBroadcast;
    case Kind::kAllGather: return kAllGather;
    case Kind::kReduceScatter: return kReduceScatter;
    case Kind::kGather:
    case Kind::kScatter: return kRooted;
    case Kind::kAllToAll: return kAllToAll;
    case Kind::kAllToAllV: return kAllToAllV;
    case Kind::kBarrier: return kBarrier;
    case Kind::kSend:
    case Kind::kRecv: return kPointToPoint;
  }
  return {};
}

// Whether the hierarchy has a form of the collective at all.
bool has_hierarchical_form(Kind kind, HierarchyShape hierarchy) {
  switch (kind) {
    case Kind::kAllReduce:
    case Kind::kBroadcast:
    case Kind::kReduce:
    case Kind::kBarrier: return hierarchy != HierarchyShape::kNone;
    case Kind::kAllGather:
    case Kind::kReduceScatter:
    case Kind::kGather:
    case Kind::kScatter:
    case Kind::kAllToAll: return hierarchy != HierarchyShape::kNone && hierarchy != HierarchyShape::kLeaders;
    default: return false;
  }
}

// Where a hierarchy beats the flat algorithms, as measured on 2 emulated nodes of 2
// ranks over TCP (tutti launch --nodes 2, UCX_TLS=tcp; docs/benchmarks.md):
//   all_reduce and broadcast at every size. On 2026-11-26, with both core states, the
//     hierarchy's all_reduce took 16-32 us from 8 B to 32 KiB against recursive
//     doubling's 34-55 (Open MPI: 26-29 at 8 B), and its broadcast 2-15 us up to
//     32 KiB against the tree's 6-37. Small all_reduces and mid-sized broadcasts
//     used to lose it, only because a node's waiting ranks spun on cores that the
//     ranks they waited for needed (emulated nodes share one machine's cores); they
//     now yield at once once a yield has shown the core shared (shm/signal.cc).
//   all_gather and reduce_scatter where it works in place, at every size: on
//     2026-11-27 (close state, 110-130 ns) it took 1.07-1.36 ms against the ring's
//     1.29-1.59 for a 4 MiB all_gather on 4 ranks, 7.2-7.9 against 10.3-10.5 at
//     16 MiB, 29.5 against 40 at 64 MiB, and reduce_scatter 1.19-1.30 against
//     1.99-2.18, 6.6-7.1 against 12.0-13.5, 28 against 48; at 6 ranks on 2 and 3
//     nodes likewise.
//   all_gather and reduce_scatter where it reorders, up to kHierarchicalBlockBytes
//     (256 KiB) a rank. On 2026-11-26 at 4 ranks (the reordering then applied to
//     every layout), with 256 KiB a rank it took 0.23-0.32 ms against the ring's
//     0.36-0.55 in both core states; with 1 MiB a rank it lost in the close state
//     (all_gather 1.96-2.15 ms against 1.41-1.70) and won in the far one (1.26-1.40
//     against 1.98-2.06), and reduce_scatter likewise.
// Chosen only where every rank has a CPU of its own (cpu_share.h), and otherwise
// forced only (TUTTI_ALGO), for want of a measured win where ranks share cores:
//   reduce, gather, scatter, barrier and all_to_all. On 2026-11-27, 4 ranks on 2
//     nodes, seven runs over both core states, each against the flat algorithm in
//     the same round: the same call took 1.2 us in one run and 8 in the next (for
//     rooted calls, whether the ranks ran ahead of the root), and either side won by
//     up to 2x at most sizes. The first two runs had the hierarchy ahead nearly
//     everywhere; the later ones did not (reduce 16 MiB: 8.5-10.0 ms against
//     7.7-10.1; gather 256 KiB: 25-76 us against 20-70; barrier 16-63 us, bimodal,
//     against 15-42). all_to_all won in the far state (32 KiB: 32-40 us against
//     57-76) and did not in the close one (26-64 us against 22-27 up to 4 KiB).
//   Through the leaders (nodes of different sizes): on 2026-11-27, 5 ranks on 2
//     emulated nodes (3 + 2) over TCP, two runs, one per core state, all_reduce took
//     38-42 us at 8 B against recursive doubling's 25, and broadcast, reduce and
//     barrier won one run and lost the other. The ranks that wait within their node
//     while the leaders talk take the cores that 5 ranks on 2 share; nodes with a
//     core per rank would not pay that, but it is not measured here.
//   With a core per rank (a lent 16-core machine, 2026-11-27, TCP, one run of each:
//     scripts/bench-hierarchy.sh, docs/benchmarks.md) they won widely. Runs there
//     differed by up to 2x at a few sizes, so core_per_rank takes them only up to
//     kHierarchicalArrayBytes (32 KiB), where most won by 2x or more, and barrier:
//     at 16 ranks on 4 nodes, the hierarchy's time over the best flat one up to
//     32 KiB was 0.37-0.61 for reduce (a vector), and for an array of every rank's
//     blocks 0.45-0.52 for scatter, 0.35-0.77 for gather, 0.19-0.33 for all_to_all;
//     barrier 0.60. At 7 ranks on 2 nodes, through the leaders: all_reduce 0.29-0.50,
//     broadcast 0.15-0.51, barrier 0.23. Past 32 KiB the margins shrank or turned
//     (scatter 0.68-0.82, the leaders' all_reduce 0.64-0.78 and broadcast 0.65-0.71;
//     reduce 1.05-1.38, gather 0.53-1.31, all_to_all 0.99-2.62, which pays for its two
//     reordering copies), and the leaders' reduce won some sizes and lost others
//     (0.35-1.62): those stay flat until a second round of runs agrees.
bool takes_hierarchy(Kind kind, size_t bytes, int size, HierarchyShape hierarchy, bool core_per_rank) {
  if (hierarchy == HierarchyShape::kNone) return false;
  if (hierarchy == HierarchyShape::kLeaders) {
    return core_per_rank && (kind == Kind::kBarrier || ((kind == Kind::kAllReduce || kind == Kind::kBroadcast) &&
                                                        bytes <= kHierarchicalArrayBytes));
  }
  switch (kind) {
    case Kind::kAllReduce:
    case Kind::kBroadcast: return true;
    case Kind::kAllGather:
    case Kind::kReduceScatter: return hierarchy == HierarchyShape::kInPlace || bytes <= kHierarchicalBlockBytes;
    case Kind::kBarrier: return core_per_rank;
    case Kind::kReduce: return core_per_rank && bytes <= kHierarchicalArrayBytes;
    case Kind::kGather:
    case Kind::kScatter:
    case Kind::kAllToAll: return core_per_rank && bytes * static_cast<size_t>(size) <= kHierarchicalArrayBytes;
    default: return false;
  }
}

bool power_of_two(int size) { return std::has_single_bit(static_cast<unsigned>(size)); }

// Steps of recursive doubling or halving on `size` ranks: log2 of the largest power of
// two within it, and two more to fold the other ranks in and out (folded_ranks.h).
int recursive_steps(int size) {
  const int steps = std::bit_width(static_cast<unsigned>(size)) - 1;
  return power_of_two(size) ? steps : steps + 2;
}

}  // namespace

const char* algorithm_name(Algorithm algorithm) { return kAlgorithmNames[static_cast<int>(algorithm)]; }

// Measured for the recursive forms (2026-11-27; emulated nodes, a rank to each, UCX
// between them; docs/benchmarks.md):
//   all_gather: where P is a power of two, recursive doubling takes Bruck's log2 P
//     steps, and then between pairs of ranks: 4 ranks over TCP, 64 B, four rounds
//     alternating, both core states: 28-35 us against Bruck's 35-42; over UCX's shared
//     memory the two were level (512 B: 4.9-5.6 against 4.3-5.4). Elsewhere its two
//     folding steps make it longer. Against the ring, with the same data, its log2 P
//     steps between pairs against the ring's P - 1 won in the far core state and were
//     level in the close one, up to kRecursiveAllGatherBytes a rank: 4 ranks, two runs
//     in each state, whole arrays of 1 MiB in 143-171 us against 237-240 (far) and
//     101-144 against 101-145 (close) over UCX's shared memory, 421-437 against
//     467-592 (far) and 377-520 against 375-382 (close) over TCP. Past it the ring was
//     as fast or faster in the close state (TCP, 2 MiB: 740-749 against 658-666; 4 MiB
//     once 1.8-2.3 ms against 1.4-1.5), and 8 ranks were level at 2 and 8 MiB.
//   reduce_scatter, small blocks: recursive halving where it takes fewer steps than
//     pairwise's P - 1 (4 ranks, and 6 up): 4 ranks, 64 B, the same rounds, 30-34 us
//     against pairwise's 41-51 over TCP, and 4.8-6.5 against 7.3-8.3 at 512 B over
//     UCX's shared memory.
//   all_reduce past kSmallMessageBytes up to kRabenseifnerBytes, on a power of two
//     of ranks: Rabenseifner's 2 log2 P steps against the ring's 2 (P - 1), the same
//     data. 4 ranks, far state, through the selector against the ring forced, best of
//     two runs each: 128 KiB in 41-49 us against 57 over UCX's shared memory (Open MPI
//     51-57), 256 KiB 78-81 against 107 (95-107); over TCP 171 against 204 (356-417)
//     and 265 against 370 (698-737). From 512 KiB the two were level, or the ring
//     ahead (TCP: 572 against 526 us at 512 KiB; 5.0-5.2 ms against 4.3-4.4 at 4 MiB).
//     8 ranks, shared memory: 216-221 us against 250-274 at 256 KiB. On 3 and 6 ranks
//     its folding steps, which move the whole vector, lost to the ring at every size
//     from 64 KiB.
Algorithm flat_choice(Kind kind, size_t bytes, int size) {
  std::span<const Algorithm> options = implemented(kind);
  // all_to_all: every message posted at once up to kSmallMessageBytes a peer, then one
  // peer a step, as MPICH does, so that large blocks do not all converge on a rank at
  // once. Between emulated nodes (2026-11-28, far state, two or three rounds, us,
  // pairwise / linear (Open MPI), by whole send buffer): 4 ranks on 2 nodes over UCX's
  // shared memory 64 B 7.01 / 4.29 (3.42), 4 KiB 11.3 / 6.50 (5.91); 4 ranks on 4
  // nodes over TCP 64 B 53.4 / 40.2 (41.4), 256 KiB 176 / 192 (445), 2 MiB 1341 / 1390
  // (1951); 8 ranks on 4 nodes over shared memory 64 B 50.4 / 30.2 (19.7), 32 KiB 81.0
  // / 52.9 (42.6). all_to_allv's bytes are what this rank sends in all, which differs
  // between ranks; they may choose differently, since either algorithm posts the same
  // messages.
  if (kind == Kind::kAllToAll || kind == Kind::kAllToAllV) {
    const size_t block = kind == Kind::kAllToAllV ? bytes / static_cast<size_t>(size) : bytes;
    return block <= kSmallMessageBytes ? Algorithm::kLinear : Algorithm::kPairwise;
  }
  if (options.size() == 1) return options[0];
  if (options.size() == 2) return options[1];
  // Below 8 ranks a binomial tree sends the whole buffer in at most 3 rounds, which
  // beat scatter + all-gather's 2(P - 1) steps at every size measured (4 ranks on 2
  // emulated nodes over TCP: 1 MiB in 0.97-1.11 ms against 2.34-2.56, 4 MiB in
  // 4.8-5.3 against 6.6; Open MPI 1.19-1.23 and 5.3); MPICH draws the same line.
  if (kind == Kind::kBroadcast && size < kBinomialBroadcastRanks) return options[1];
  // At 2 ranks the ring's reduce splits the one message a binomial tree sends into two
  // steps, with half the vector each way, and reduces on both ranks: 2 ranks on 2
  // emulated nodes, two rounds alternating both forced (2026-11-28, far state), us,
  // binomial / ring (Open MPI): over UCX's shared memory 256 KiB 21.8 / 48.4 (19.5),
  // 1 MiB 180 / 164 (160), 16 MiB 2972 / 3183 (3070); over TCP 64 KiB 13.3 / 28.2
  // (47.3), 1 MiB 322 / 390 (263), 16 MiB 6299 / 5866 (4320).
  if (kind == Kind::kReduce && size == 2) return options[1];
  if (kind == Kind::kAllGather && power_of_two(size) && bytes <= kRecursiveAllGatherBytes) {
    return Algorithm::kRecursiveDoubling;
  }
  if (bytes > kSmallMessageBytes) {
    if (kind == Kind::kAllReduce && size >= 4 && power_of_two(size) && bytes <= kRabenseifnerBytes) {
      return Algorithm::kRabenseifner;
    }
    return options[2];
  }
  if (kind == Kind::kAllGather) return Algorithm::kBruck;
  if (kind == Kind::kReduceScatter) {
    return recursive_steps(size) < size - 1 ? Algorithm::kRecursiveHalving : Algorithm::kPairwise;
  }
  return options[1];
}

std::string Selector::choices(Kind kind) {
  std::string text = concat(kind_name(kind), ":");
  for (Algorithm algorithm : implemented(kind)) text += concat(" ", algorithm_name(algorithm));
  return text;
}

Selector Selector::from_environment() {
  Selector selector;
  auto value = settings::text("TUTTI_ALGO");
  if (!value) return selector;
  std::stringstream entries(*value);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    if (entry.empty()) continue;
    size_t equals = entry.find('=');
    if (equals == std::string::npos) {
      fail(Status::kInvalidArgument,
           concat("TUTTI_ALGO entry \"", entry, "\" is not collective=algorithm, e.g. TUTTI_ALGO=all_reduce=ring"));
    }
    std::string collective = entry.substr(0, equals), algorithm = entry.substr(equals + 1);
    std::optional<Kind> kind;
    for (int k = 0; k < kKindCount; ++k) {
      if (collective == kind_name(static_cast<Kind>(k))) kind = static_cast<Kind>(k);
    }
    if (!kind || is_point_to_point(*kind)) {
      fail(Status::kInvalidArgument,
           concat("TUTTI_ALGO names \"", collective,
                  "\", which is not a collective; use all_reduce, reduce, broadcast, all_gather, reduce_scatter, "
                  "gather, scatter, all_to_all, all_to_allv or barrier"));
    }
    bool found = false;
    for (Algorithm candidate : implemented(*kind)) {
      if (algorithm == algorithm_name(candidate)) {
        selector.forced_[static_cast<int>(*kind)] = candidate;
        found = true;
      }
    }
    if (!found) {
      fail(Status::kInvalidArgument, concat("TUTTI_ALGO asks for \"", algorithm, "\" for ", collective,
                                            ", which has no such algorithm; the choices are ", choices(*kind)));
    }
  }
  return selector;
}

void Selector::fail_unavailable(Kind kind, Algorithm forced, HierarchyShape hierarchy) {
  const char* why = forced == Algorithm::kShm ? "are not all on one node"
                    : hierarchy == HierarchyShape::kLeaders
                        ? "are on nodes of different sizes, where only all_reduce, broadcast, reduce and barrier are "
                          "hierarchical"
                        : "are not on several nodes with two or more ranks on some";
  fail(Status::kUnsupported, concat("TUTTI_ALGO forces ", algorithm_name(forced), " for ", kind_name(kind),
                                    ", but this communicator's ranks ", why, "; pick another of ", choices(kind)));
}

Algorithm Selector::choose(Kind kind, size_t bytes, int size, bool shm_available, HierarchyShape hierarchy,
                           bool core_per_rank) const {
  const auto& forced = forced_[static_cast<int>(kind)];
  // A single rank has no group to share memory with; any algorithm is a local copy.
  if (forced && !(*forced == Algorithm::kShm && size == 1)) [[unlikely]] {
    if (*forced == Algorithm::kShm && !shm_available) fail_unavailable(kind, *forced, hierarchy);
    if (*forced == Algorithm::kHierarchical && !has_hierarchical_form(kind, hierarchy)) {
      fail_unavailable(kind, *forced, hierarchy);
    }
    return *forced;
  }
  // Every collective but all_to_allv has a shared-memory form; sends and receives
  // do not.
  if (shm_available && size > 1 && !is_point_to_point(kind) && kind != Kind::kAllToAllV) return Algorithm::kShm;
  if (takes_hierarchy(kind, bytes, size, hierarchy, core_per_rank)) return Algorithm::kHierarchical;
  // A communicator of 2 ranks: the ring's all_reduce moves the same bytes each way as
  // recursive doubling's one swap, in two steps instead of one, and reduces half the
  // vector instead of all of it. Where the two ranks share a machine and UCX copies
  // between the processes (emulated nodes over its shared memory), the second step
  // costs more than the half reduction saves: each rank reads the block its peer has
  // just written, and the next call writes the block its peer has just read, so each
  // cache line crosses the cores twice. 2 ranks on 2 emulated nodes, far state
  // (607-670 ns), rounds alternating both forced and Open MPI (2026-11-29), us, ring /
  // recursive doubling (Open MPI): over UCX's shared memory 256 KiB 53-70 / 30-37
  // (42-50), 1 MiB 193-229 / 140-157 (183), 4 MiB 749-878 / 479-735 (669-740),
  // 16 MiB 3114-3363 / 3280-4778 (3462-4532); over TCP, four rounds, 256 KiB 109-207 /
  // 114-182 (343-349), 512 KiB 218-282 / 238-411 (336-344), 1 MiB 350-426 / 470-801
  // (458-623). Blind to the transport, the selector takes recursive doubling up to
  // kTwoRankDoublingBytes (one chunk, one swap), where both won or drew. The
  // hierarchy's step between 2 nodes keeps flat_choice's: there every local rank's pair
  // steps at once, and where ranks share cores, recursive doubling's whole-vector
  // reductions double the cores' work (4 ranks on 2 emulated nodes over UCX's shared
  // memory, the same day, it from 256 KiB to 4 MiB: 1.2-1.6x the ring's time).
  if (kind == Kind::kAllReduce && size == 2 && bytes <= kTwoRankDoublingBytes) return Algorithm::kRecursiveDoubling;
  return flat_choice(kind, bytes, size);
}

}  // namespace tutti::collectives
