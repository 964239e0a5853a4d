// The two halves of the ring algorithms, shared by all_reduce/ring.cc, reduce/ring.cc,
// reduce_scatter/ring.cc, all_gather/ring.cc and broadcast/scatter_all_gather.cc.
// Each rank talks only to its neighbours (rank + 1 to the right, rank - 1 to the
// left), one block per step, P - 1 steps, so every link carries (P - 1) / P of the
// data whatever P is. Blocks may differ in size or be empty (see Blocks).
#pragma once

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/exchange.h"
#include "runtime/operation/dtype.h"

namespace tutti::collectives {

// Reduce-scatter: leaves block `rank` (as `blocks` cuts the vector) of the reduction
// of every rank's `send` at `into`, or, when into is null, in scratch slot 1; returns
// where it is. into may be send's own block `rank` (the in-place forms): it is written
// only in the last step, after the last read of that block. AVG is left as a SUM for
// the caller to divide. Scratch: slots 0 and 1, one block each.
const void* ring_reduce_scatter(Exchange& x, const void* send, void* into, const Blocks& blocks, Dtype dtype,
                                ReduceOp op);

// All-gather in place: rank r starts holding block (r + shift) mod P of `buffer` and
// ends holding all of them. No scratch. With `own`, that block is still there instead
// (not in `buffer`): step 0 sends it from `own` and copies it into its place while the
// step's messages move.
void ring_all_gather(Exchange& x, void* buffer, const Blocks& blocks, int shift, const void* own = nullptr);

}  // namespace tutti::collectives
