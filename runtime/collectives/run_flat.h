// The point-to-point algorithm the selector named, run: for the collectives whose
// flat choice both the engine and the hierarchy's step between nodes make
// (flat_choice), so that one place maps each choice to its function. Any other
// algorithm runs the collective's latency-optimal default.
#pragma once

#include <cstddef>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/selector.h"

namespace tutti::collectives {

inline void run_all_reduce(Algorithm algorithm, Exchange& x, const void* send, void* recv, size_t count, Dtype dtype,
                           ReduceOp op) {
  if (algorithm == Algorithm::kRing) return all_reduce_ring(x, send, recv, count, dtype, op);
  if (algorithm == Algorithm::kRabenseifner) return all_reduce_rabenseifner(x, send, recv, count, dtype, op);
  return all_reduce_recursive_doubling(x, send, recv, count, dtype, op);
}

inline void run_all_gather(Algorithm algorithm, Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  if (algorithm == Algorithm::kRing) return all_gather_ring(x, send, recv, bytes_per_rank);
  if (algorithm == Algorithm::kRecursiveDoubling) return all_gather_recursive_doubling(x, send, recv, bytes_per_rank);
  return all_gather_bruck(x, send, recv, bytes_per_rank);
}

inline void run_reduce_scatter(Algorithm algorithm, Exchange& x, const void* send, void* recv, size_t count_per_rank,
                               Dtype dtype, ReduceOp op) {
  if (algorithm == Algorithm::kRing) return reduce_scatter_ring(x, send, recv, count_per_rank, dtype, op);
  if (algorithm == Algorithm::kRecursiveHalving) {
    return reduce_scatter_recursive_halving(x, send, recv, count_per_rank, dtype, op);
  }
  return reduce_scatter_pairwise(x, send, recv, count_per_rank, dtype, op);
}

}  // namespace tutti::collectives
