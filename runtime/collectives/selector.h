// Which algorithm runs a collective: shared memory when every rank of the
// communicator is on one node, otherwise a point-to-point algorithm chosen by message
// size (latency-optimal trees and recursive doubling for small messages,
// bandwidth-optimal rings for large ones). TUTTI_ALGO overrides the choice per
// collective, e.g. TUTTI_ALGO="all_reduce=ring,broadcast=binomial", which is how the
// tests run every algorithm on its own.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>

#include "runtime/collectives/call.h"

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
  kDirect,  // send and recv: straight to the peer
};

const char* algorithm_name(Algorithm algorithm);

class Selector {
 public:
  // Reads TUTTI_ALGO; throws Error(kInvalidArgument) naming an unknown collective or
  // an algorithm that does not implement it, with the choices.
  static Selector from_environment();

  // `bytes` is the size of one rank's message (per-rank block for the *_gather,
  // *_scatter and all_to_all calls); shm_available when the communicator has a
  // shared-memory group. A forced shm on a communicator without one is an error.
  Algorithm choose(Kind kind, size_t bytes, int size, bool shm_available) const;

  // "all_reduce: shm, ring, recursive_doubling", for help and messages.
  static std::string choices(Kind kind);

 private:
  // choose() when TUTTI_ALGO forces shm where there is none; cold, off its fast path.
  [[noreturn, gnu::cold, gnu::noinline]] static void fail_shm_unavailable(Kind kind);
  std::array<std::optional<Algorithm>, kKindCount> forced_{};
};

}  // namespace tutti::collectives
