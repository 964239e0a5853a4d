// Which algorithm runs a collective: shared memory when every rank of the
// communicator is on one node; where its ranks span nodes alike, the hierarchy
// (hierarchy.h) at the sizes where it wins; otherwise a point-to-point algorithm chosen
// by message size (latency-optimal trees and recursive doubling for small messages,
// bandwidth-optimal rings for large ones; broadcast below 8 ranks keeps its tree).
// TUTTI_ALGO overrides the choice per collective, e.g.
// TUTTI_ALGO="all_reduce=ring,broadcast=binomial", which is how the tests run every
// algorithm on its own.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "runtime/operation/call.h"

namespace tutti::collectives {

enum class Algorithm : uint8_t {
  kShm,
  kRing,
  kRecursiveDoubling,
  kBinomial,
  kScatterAllGather,
  kBruck,
  kPairwise,
  kLinear,
  kDissemination,
  kDirect,        // send and recv: straight to the peer
  kHierarchical,  // shared memory within nodes, point-to-point between them (hierarchy.h)
  kRecursiveHalving,
  kRabenseifner,
};

// Up to this many bytes per rank, the latency-optimal algorithm wins over the
// bandwidth-optimal one on loopback and shared memory; beyond, moving less data does.
constexpr size_t kSmallMessageBytes = 64 * 1024;
// Up to this many bytes (from kSmallMessageBytes), all_reduce on a power of two of
// ranks takes Rabenseifner's algorithm; beyond, the ring.
constexpr size_t kRabenseifnerBytes = 256 * 1024;
// Up to this many bytes, all_reduce on a communicator of 2 ranks keeps recursive
// doubling (Selector::choose says why); beyond, the ring.
constexpr size_t kTwoRankDoublingBytes = 256 * 1024;
// Up to this many bytes a rank, all_gather on a power of two of ranks takes recursive
// doubling; beyond, or on other rank counts past kSmallMessageBytes, the ring.
constexpr size_t kRecursiveAllGatherBytes = 256 * 1024;
// Below this many ranks, broadcast keeps its binomial tree at every size.
constexpr int kBinomialBroadcastRanks = 8;
// Up to this many bytes a rank, all_gather and reduce_scatter take a reordering
// hierarchy where there is one (an in-place one at every size; selector.cc says why).
constexpr size_t kHierarchicalBlockBytes = 256 * 1024;
// With a CPU per rank, reduce (its vector), gather, scatter and all_to_all (the whole
// array, every rank's block), and through the leaders all_reduce and broadcast, take
// the hierarchy up to this many bytes (selector.cc).
constexpr size_t kHierarchicalArrayBytes = 32 * 1024;

// The hierarchy a communicator has (hierarchy.h): none; one whose node steps work in
// place (ranks numbered node by node); one whose all_gather and reduce_scatter
// reorder the whole array through a copy (ranks numbered otherwise, e.g. cyclically);
// or, for nodes of different sizes, one through each node's leader, which has
// all_reduce, broadcast, reduce and barrier only.
enum class HierarchyShape { kNone, kInPlace, kReordering, kLeaders };

const char* algorithm_name(Algorithm algorithm);

// The point-to-point algorithm the selector takes where there is neither shared memory
// nor a hierarchy (but for a 2-rank communicator's all_reduce, which choose() takes
// itself), and that the hierarchy takes between its nodes: by `bytes` (as choose()
// counts them) and the number of ranks that talk.
Algorithm flat_choice(Kind kind, size_t bytes, int size);

class Selector {
 public:
  // Reads TUTTI_ALGO; throws Error(kInvalidArgument) naming an unknown collective or
  // an algorithm that does not implement it, with the choices.
  static Selector from_environment();

  // `bytes` is the size of one rank's message (per-rank block for the *_gather,
  // *_scatter and all_to_all calls); shm_available when the communicator has a
  // shared-memory group; hierarchy, the one it has (several nodes alike: hierarchy.h),
  // which all_reduce and broadcast take at every size, all_gather and reduce_scatter
  // at every size where it works in place and up to kHierarchicalBlockBytes a rank
  // where it reorders. Its other forms win only where core_per_rank (every rank has a
  // CPU of its own: cpu_share.h): barrier, and up to kHierarchicalArrayBytes reduce,
  // gather, scatter and all_to_all, and through the leaders all_reduce and broadcast
  // (and barrier); otherwise only where forced. A forced shm or hierarchical where
  // there is none is an error.
  Algorithm choose(Kind kind, size_t bytes, int size, bool shm_available, HierarchyShape hierarchy,
                   bool core_per_rank = false) const;

  // "all_reduce: shm, ring, recursive_doubling", for help and messages.
  static std::string choices(Kind kind);

 private:
  // choose() when TUTTI_ALGO forces shm or hierarchical where there is none; cold, off
  // its fast path.
  [[noreturn, gnu::cold, gnu::noinline]] static void fail_unavailable(Kind kind, Algorithm forced,
                                                                      HierarchyShape hierarchy);
  std::array<std::optional<Algorithm>, kKindCount> forced_{};
};

}  // namespace tutti::collectives
