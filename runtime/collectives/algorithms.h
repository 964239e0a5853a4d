// The point-to-point algorithms, one file each under runtime/collectives/<collective>/,
// each usable on its own (tests run every one directly) and chosen among by
// selector.cc. They run over an Exchange, so any Transport carries them.
//
// What the caller (collectives/run.cc) guarantees: arguments validated on this rank;
// buffers either disjoint or in the one in-place form tutti.h allows for that
// collective; broadcast's root has already copied its send buffer into `buffer`.
// What they guarantee: no allocation beyond the communicator's Scratch (slots 0-1;
// slots 2-3 belong to the caller), the user's send buffer is never written, and AVG
// is divided exactly once. A rank that disagrees on the count surfaces as kMismatch
// through Exchange.
//
// Counts are elements, `bytes` arguments are bytes; *_per_rank is the block of one rank.
#pragma once

#include <cstddef>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/exchange.h"
#include "runtime/operation/dtype.h"

namespace tutti::collectives {

// all_reduce: ring = reduce-scatter then all-gather around a ring (2(P-1)/P of the data
// per rank: bandwidth-optimal); recursive_doubling = log2(P) exchanges of the whole
// vector (latency-optimal), with the ranks beyond the largest power of two folded in
// first and served last.
void all_reduce_ring(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op);
void all_reduce_recursive_doubling(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op);
// rabenseifner = recursive-halving reduce-scatter, then recursive-doubling all-gather:
// the ring's data in 2 log2(P) steps instead of 2 (P - 1) (two more where P is not a
// power of two).
void all_reduce_rabenseifner(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op);

// reduce to root: binomial tree (latency), or ring = ring reduce-scatter then each
// rank sends its reduced block to root (bandwidth). recv is used on root only.
void reduce_binomial(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root);
void reduce_ring(Exchange& x, const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root);

// broadcast of root's `buffer`: binomial tree, or scatter then ring all-gather (van de
// Geijn; bandwidth).
void broadcast_binomial(Exchange& x, void* buffer, size_t bytes, int root);
void broadcast_scatter_all_gather(Exchange& x, void* buffer, size_t bytes, int root);

// all_gather: ring (bandwidth), Bruck (ceil(log2 P) steps, any P; latency), or
// recursive doubling (log2 P steps between pairs of ranks, two more where P is not a
// power of two; latency). In place when send == recv + rank * bytes_per_rank.
void all_gather_ring(Exchange& x, const void* send, void* recv, size_t bytes_per_rank);
void all_gather_bruck(Exchange& x, const void* send, void* recv, size_t bytes_per_rank);
void all_gather_recursive_doubling(Exchange& x, const void* send, void* recv, size_t bytes_per_rank);

// reduce_scatter: ring (bandwidth), pairwise (every rank sends each block straight
// to its owner; fewer hops for small blocks), or recursive halving (log2 P steps, two
// more where P is not a power of two; the fewest messages, for a working copy of the
// vector). In place when recv == send + rank * count_per_rank * dtype_size.
void reduce_scatter_ring(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype, ReduceOp op);
void reduce_scatter_pairwise(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype,
                             ReduceOp op);
void reduce_scatter_recursive_halving(Exchange& x, const void* send, void* recv, size_t count_per_rank, Dtype dtype,
                                      ReduceOp op);

// gather to root / scatter from root: linear (root talks to every rank at once), or
// binomial tree (log2 P steps). In place on root when send (gather) or recv (scatter)
// is root's own block of the full buffer.
void gather_linear(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root);
void gather_binomial(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root);
void scatter_linear(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root);
void scatter_binomial(Exchange& x, const void* send, void* recv, size_t bytes_per_rank, int root);

// all_to_all and all_to_allv: pairwise (P-1 steps, one peer each), or linear
// (everything posted at once). send and recv are disjoint (the caller stages
// all_to_all's in-place form; all_to_allv has none).
void all_to_all_pairwise(Exchange& x, const void* send, void* recv, const PeerBlocks& blocks);
void all_to_all_linear(Exchange& x, const void* send, void* recv, const PeerBlocks& blocks);
inline void all_to_all_pairwise(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  all_to_all_pairwise(x, send, recv, PeerBlocks::uniform(bytes_per_rank));
}
inline void all_to_all_linear(Exchange& x, const void* send, void* recv, size_t bytes_per_rank) {
  all_to_all_linear(x, send, recv, PeerBlocks::uniform(bytes_per_rank));
}

// barrier: dissemination (ceil(log2 P) rounds of empty messages, any P).
void barrier_dissemination(Exchange& x);

}  // namespace tutti::collectives
