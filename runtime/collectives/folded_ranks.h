// How the recursive algorithms (all_reduce's and all_gather's recursive doubling,
// reduce_scatter's recursive halving) run on any number of ranks P: with p the largest
// power of two <= P and r = P - p, the first 2r ranks pair up, each even one hands its
// data to the odd one above it and sits out, and the p ranks left work as a power of
// two, numbered 0 .. p - 1 (the odd ranks below 2r, then every rank from 2r up). Each
// such "virtual" rank stands for a run of one or two consecutive blocks of a buffer
// laid out in rank order: its own, and its sitter-out's below it.
#pragma once

#include <bit>

namespace tutti::collectives {

class FoldedRanks {
 public:
  FoldedRanks(int size, int rank)
      : rank_(rank), pof2_(static_cast<int>(std::bit_floor(static_cast<unsigned>(size)))), folded_(size - pof2_) {}

  // The p of the power-of-two stage.
  int pof2() const { return pof2_; }
  // The even rank below 2r: it hands its data to rank + 1 and waits for the result.
  bool sits_out() const { return rank_ < 2 * folded_ && rank_ % 2 == 0; }
  // The odd rank below 2r: it takes rank - 1's data in before the stage, and hands the
  // result back after it.
  bool takes_in() const { return rank_ < 2 * folded_ && rank_ % 2 == 1; }
  // This rank's number in the power-of-two stage (not for a rank that sits out).
  int virtual_rank() const { return rank_ < 2 * folded_ ? rank_ / 2 : rank_ - folded_; }
  // The real rank of virtual rank v.
  int rank_of(int v) const { return v < folded_ ? 2 * v + 1 : v + folded_; }
  // The first block virtual rank v stands for; first_block(p) is P, so virtual ranks
  // [a, b) stand for blocks [first_block(a), first_block(b)).
  int first_block(int v) const { return v < folded_ ? 2 * v : v + folded_; }

 private:
  int rank_;
  int pof2_;
  int folded_;
};

}  // namespace tutti::collectives
