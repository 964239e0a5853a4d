// 01_all_reduce: the tutorial's all_reduce.py in C++, with the header-only wrapper
// (bindings/cpp, #include "tutti/tutti.hpp"). Every rank draws a shape in an 11x11
// matrix, and all_reduce with TUTTI_OP_MAX leaves every rank holding the cell-by-cell
// maximum of all of them: the shapes laid over each other, the higher value on top.
//
// Run (1 to 4 ranks; the tutorial runs 2, and ranks 2 and 3 add two more shapes):
//   tutti launch -n 4 ./build/bin/cpp/01_all_reduce
//
// Prints, for each rank, its matrix before and after, as examples/lua/01_all_reduce.lua
// does with NO_COLOR=1:
//   [0] Rank: 0, before all_reduce.
//   [0] 0 0 0 0 0 0 0 0 0 0 0
//   [0] 0 0 0 1 0 0 0 0 0 0 0       rank 0: a disk of radius 2 with value 1
//   ...
//   [0] Rank: 0, after all_reduce(max).
//   [0] 0 0 0 0 0 0 0 0 0 0 0
//   [0] 0 0 0 1 0 0 0 0 0 0 0
//   [0] 0 0 1 1 1 0 0 0 0 0 0
//   [0] 0 1 1 2 2 2 0 0 0 0 0       rank 1's square (value 2) over rank 0's disk
//   ...                             and the same on every rank
#include <array>
#include <cstdio>

#include "tutti/tutti.hpp"

namespace {

constexpr int kSide = 11;
using Image = std::array<float, kSide * kSide>;  // row-major

// The tutorial's disk(): the cells within radius of (row, column), 0-based as in Python.
void disk(Image& image, int row, int column, int radius, float value) {
  for (int r = 0; r < kSide; ++r) {
    for (int c = 0; c < kSide; ++c) {
      if ((r - row) * (r - row) + (c - column) * (c - column) <= radius * radius) image[r * kSide + c] = value;
    }
  }
}

// The tutorial's square(): rows row..row+length and columns column..column+length.
void square(Image& image, int row, int column, int length, float value) {
  for (int r = row; r <= row + length && r < kSide; ++r) {
    for (int c = column; c <= column + length && c < kSide; ++c) image[r * kSide + c] = value;
  }
}

// The tutorial's rank_print, then the matrix. The launcher tags each line with the rank.
void show(int rank, const char* what, const Image& image) {
  std::printf("Rank: %d, %s.\n", rank, what);
  for (int r = 0; r < kSide; ++r) {
    for (int c = 0; c < kSide; ++c) std::printf(c ? " %g" : "%g", static_cast<double>(image[r * kSide + c]));
    std::printf("\n");
  }
}

}  // namespace

int main() {
  try {
    tutti::Comm world = tutti::Comm::init();  // rank, size and rendezvous from tutti launch
    const int rank = world.rank(), size = world.size();
    if (size > 4) {
      std::fprintf(stderr, "01_all_reduce: %d ranks, but there are shapes for 1 to 4; run it with tutti launch -n 4\n",
                   size);
      return 1;
    }
    // Value rank + 1. Ranks 2 and 3 draw rank 0's and rank 1's shapes turned half a turn.
    Image image{};
    const float value = static_cast<float>(rank + 1);
    if (rank == 0) disk(image, 3, 3, 2, value);    // disk(image, (3, 3), 2, 1), as in the tutorial
    if (rank == 1) square(image, 3, 3, 2, value);  // square(image, (3, 3), 2, 2), as in the tutorial
    if (rank == 2) disk(image, 7, 7, 2, value);
    if (rank == 3) square(image, 5, 5, 2, value);
    show(rank, "before all_reduce", image);

    // The main operation, in place on the std::array: its dtype (float32) and count
    // (121) come from the array itself.
    world.all_reduce(image, TUTTI_OP_MAX);
    show(rank, "after all_reduce(max)", image);
    return 0;
  } catch (const tutti::Error& e) {
    std::fprintf(stderr, "01_all_reduce: %s: %s\n", e.name(), e.what());
    return 1;
  }
}
