// The phases of the recursive algorithms, shared by reduce_scatter/recursive_halving.cc,
// all_gather/recursive_doubling.cc and all_reduce/rabenseifner.cc. Among a power of two
// p of ranks, each rank talks to one partner per step, log2 p steps, on a vector that
// `blocks` cuts into P blocks (they may differ in size or be empty); folded_ranks.h
// says how the ranks beyond p fold in and out, and which run of blocks each of the p
// virtual ranks stands for.
#pragma once

#include <cstddef>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/exchange.h"
#include "runtime/collectives/folded_ranks.h"
#include "runtime/operation/dtype.h"

namespace tutti::collectives {

// Folding in: a rank that sits out sends its whole vector (`bytes`) to the rank above,
// which reduces it into its own; other ranks do nothing. Scratch: slot 1, one chunk.
void fold_in(Exchange& x, const FoldedRanks& ranks, char* vector, size_t bytes, Dtype dtype, ReduceOp op);

// Recursive halving, for a rank that does not sit out: at distance p/2, p/4, ... 1, it
// sends the partner the half of its current run that the partner keeps, and reduces
// the partner's copy of the half it keeps into its own, until its own run (its virtual
// rank's blocks) holds the reduction of every rank's vector. AVG is left as a SUM.
// Each rank sends (p - 1) / p of the vector in all. Scratch: slot 1, one chunk.
void halving_reduce_scatter(Exchange& x, const FoldedRanks& ranks, char* vector, const Blocks& blocks, Dtype dtype,
                            ReduceOp op);

// Recursive doubling, for a rank that does not sit out and holds its own run: at
// distance 1, 2, ... p/2, it swaps the runs it has gathered with the partner's, which
// lie right beside them, until it holds every block. No scratch. From first_distance
// (a power of two) where the caller has made the steps before it.
void doubling_all_gather(Exchange& x, const FoldedRanks& ranks, char* vector, const Blocks& blocks,
                         int first_distance = 1);

}  // namespace tutti::collectives
