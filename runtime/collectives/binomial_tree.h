// The binomial tree over a communicator's ranks, rooted at any rank, that the reduce,
// broadcast, gather and scatter algorithms walk. Ranks are renumbered relative to the
// root (vrank = rank - root mod size); vrank v's parent is v minus its lowest set bit,
// and its subtree is the vranks [v, v + subtree_size()), so a subtree's blocks are
// contiguous when laid out in vrank order. Works for any size, power of two or not.
#pragma once

#include <algorithm>

namespace tutti::collectives {

class BinomialTree {
 public:
  struct Child {
    int vrank;
    int rank;
    int blocks;  // vranks in the child's subtree: [vrank, vrank + blocks)
  };

  BinomialTree(int rank, int size, int root)
      : size_(size), root_(root), vrank_(wrapped(rank - root + size, size)), span_(span_of(vrank_, size)) {}

  int vrank() const { return vrank_; }
  bool is_root() const { return vrank_ == 0; }
  int rank_of(int vrank) const { return wrapped(vrank + root_, size_); }
  int parent() const { return rank_of(vrank_ - span_); }
  bool parent_is_root() const { return vrank_ == span_; }
  int subtree_size() const { return std::min(span_, size_ - vrank_); }
  bool has_children() const { return subtree_size() > 1; }

  // Calls fn(Child) for each child: nearest (smallest subtree) first, which is the
  // order their data is ready in on the way up.
  template <typename Fn>
  void each_child_nearest_first(Fn&& fn) const {
    for (int mask = 1; mask < span_ && vrank_ + mask < size_; mask <<= 1) fn(child(mask));
  }
  // Farthest (largest subtree) first, so that on the way down the longest branch
  // starts soonest.
  template <typename Fn>
  void each_child_farthest_first(Fn&& fn) const {
    for (int mask = span_ >> 1; mask >= 1; mask >>= 1) {
      if (vrank_ + mask < size_) fn(child(mask));
    }
  }

 private:
  // i mod size for i in [0, 2 size): a division would cost a small broadcast's
  // receiver some 2% of its time.
  static int wrapped(int i, int size) { return i < size ? i : i - size; }
  // The lowest set bit of vrank; for the root, the smallest power of two >= size.
  static int span_of(int vrank, int size) {
    if (vrank != 0) return vrank & -vrank;
    int span = 1;
    while (span < size) span <<= 1;
    return span;
  }
  Child child(int mask) const {
    int v = vrank_ + mask;
    return Child{v, rank_of(v), std::min(mask, size_ - v)};
  }

  int size_;
  int root_;
  int vrank_;
  int span_;
};

}  // namespace tutti::collectives
