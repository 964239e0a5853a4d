// Every point-to-point algorithm of runtime/collectives/ (algorithms.h), run directly
// on ranks as threads (rank_threads.h) for world sizes 1, 2, 3, 4, 5 and 8, counts 0,
// 1, 7 and 2053 (which no size divides), every dtype with SUM, int32 with every op,
// the float types with AVG, roots 0, size - 1 and one between, and the in-place
// forms. Each result is checked against one computed here (rank_data.h), and so are
// the user's send buffer (unchanged), the guard zones around every buffer (untouched),
// and the scratch each rank took (within what the algorithm should need). How they
// fail (a count that differs, an abort, a rank that never joins) is test_exchange.cc's.
#include <criterion/criterion.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/blocks.h"
#include "tests/runtime/collectives/rank_data.h"
#include "tests/runtime/collectives/rank_threads.h"

using rank_data::Expected;
using rank_data::Guarded;
using rank_threads::first_failure;
using rank_threads::Outcome;
using rank_threads::run_ranks;
using tutti::Dtype;
using tutti::dtype_size;
using tutti::ReduceOp;
using tutti::Status;
using tutti::collectives::Exchange;

namespace {

constexpr int kSizes[] = {1, 2, 3, 4, 5, 8};
constexpr size_t kCounts[] = {0, 1, 7, 2053};
// The collectives that only move bytes are run with 1- and 4-byte elements.
constexpr size_t kElementBytes[] = {1, 4};

struct Case {
  Dtype dtype;
  ReduceOp op;
};
constexpr Case kCases[] = {
    {Dtype::kInt32, ReduceOp::kSum},      {Dtype::kInt32, ReduceOp::kProd},     {Dtype::kInt32, ReduceOp::kMin},
    {Dtype::kInt32, ReduceOp::kMax},      {Dtype::kInt32, ReduceOp::kAvg},      {Dtype::kFloat32, ReduceOp::kSum},
    {Dtype::kFloat64, ReduceOp::kSum},    {Dtype::kFloat16, ReduceOp::kSum},    {Dtype::kInt8, ReduceOp::kSum},
    {Dtype::kUint8, ReduceOp::kSum},      {Dtype::kInt64, ReduceOp::kSum},      {Dtype::kBfloat16, ReduceOp::kSum},
    {Dtype::kFloat32, ReduceOp::kAvg},    {Dtype::kFloat64, ReduceOp::kAvg},    {Dtype::kFloat16, ReduceOp::kAvg},
    {Dtype::kBfloat16, ReduceOp::kAvg},   {Dtype::kFloat8E4m3, ReduceOp::kSum}, {Dtype::kFloat8E5m2, ReduceOp::kSum},
    {Dtype::kFloat8E4m3, ReduceOp::kAvg}, {Dtype::kFloat8E5m2, ReduceOp::kAvg},
};

// 0, size - 1 and the middle one, without repeats.
std::vector<int> roots_for(int size) {
  std::vector<int> roots{0};
  for (int root : {size / 2, size - 1}) {
    if (std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  }
  return roots;
}

// The most scratch an algorithm may hold on one rank: (size, count or bytes per rank,
// element bytes) -> bytes, counted as Scratch rounds each slot (64-byte multiples).
using ScratchLimit = size_t (*)(int size, size_t count, size_t element);
size_t slot(size_t bytes) { return std::max<size_t>(64, (bytes + 63) / 64 * 64); }
size_t one_chunk(size_t count, size_t element) {
  return std::min(count, tutti::collectives::chunk_elements(element)) * element;
}
size_t no_scratch(int, size_t, size_t) { return 0; }
size_t two_ring_blocks(int size, size_t count, size_t element) {
  return 2 * slot((count + static_cast<size_t>(size) - 1) / static_cast<size_t>(size) * element);
}
size_t one_chunk_limit(int, size_t count, size_t element) { return slot(one_chunk(count, element)); }
size_t two_chunks_limit(int, size_t count, size_t element) { return 2 * slot(one_chunk(count, element)); }
size_t two_blocks_limit(int, size_t count, size_t element) { return 2 * slot(count * element); }
size_t one_block_limit(int, size_t count, size_t element) { return slot(count * element); }
// A working copy of the whole vector, and one chunk of what arrives.
size_t vector_and_chunk_limit(int size, size_t count, size_t element) {
  const size_t vector = static_cast<size_t>(size) * count;
  return slot(vector * element) + slot(one_chunk(vector, element));
}
size_t half_the_ranks(int size, size_t bytes_per_rank, size_t) {
  return slot(static_cast<size_t>(size / 2) * bytes_per_rank);
}

std::string describe(const char* algorithm, int size, size_t count, const char* type, int root, bool in_place) {
  return tutti::concat(algorithm, " with ", size, " ranks, count ", count, ", ", type,
                       root >= 0 ? tutti::concat(", root ", root) : std::string(), in_place ? ", in place" : "");
}

std::string case_name(Case c) { return tutti::concat(tutti::dtype_name(c.dtype), " ", tutti::reduce_op_name(c.op)); }

// Fails the test with `what` and the first problem found, if any.
void require(const std::string& what, const std::string& problem) {
  cr_assert(problem.empty(), "%s: %s", what.c_str(), problem.c_str());
}

std::string check_outcomes(const std::vector<Outcome>& outcomes, size_t scratch_limit) {
  std::string failure = first_failure(outcomes);
  if (!failure.empty()) return failure;
  for (size_t rank = 0; rank < outcomes.size(); ++rank) {
    if (outcomes[rank].scratch_bytes > scratch_limit) {
      return tutti::concat("rank ", rank, " took ", outcomes[rank].scratch_bytes, " bytes of scratch, more than ",
                           scratch_limit);
    }
  }
  return "";
}

std::string check_guards(const std::vector<Guarded>& buffers, const char* which) {
  for (size_t rank = 0; rank < buffers.size(); ++rank) {
    if (!buffers[rank].guards_intact()) return tutti::concat("rank ", rank, " wrote outside its ", which, " buffer");
  }
  return "";
}

// Bytes [first, first + n) of `got` against rank's input bytes [from, from + n).
std::string check_bytes(const unsigned char* got, size_t n, int rank, size_t from, const char* what) {
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != rank_data::input_byte(rank, from + i)) {
      return tutti::concat(what, ": byte ", i, " is not byte ", from + i, " of rank ", rank, "'s input");
    }
  }
  return "";
}

std::vector<Guarded> inputs(int size, Dtype dtype, size_t count) {
  std::vector<Guarded> buffers;
  for (int rank = 0; rank < size; ++rank) {
    buffers.emplace_back(count * dtype_size(dtype));
    rank_data::fill_input(dtype, rank, buffers.back().data(), count);
  }
  return buffers;
}

std::vector<Guarded> byte_inputs(int size, size_t bytes) {
  std::vector<Guarded> buffers;
  for (int rank = 0; rank < size; ++rank) {
    buffers.emplace_back(bytes);
    for (size_t i = 0; i < bytes; ++i) buffers.back().data()[i] = rank_data::input_byte(rank, i);
  }
  return buffers;
}

std::vector<Guarded> outputs(int size, size_t bytes) {
  return std::vector<Guarded>(static_cast<size_t>(size), Guarded(bytes));
}

// A byte range of one rank's buffer: in the in-place forms, the part of send that is
// also recv, which the operation may write.
struct Range {
  size_t from = 0;
  size_t to = 0;
};

// "" when every rank's send buffer still holds its input (`original(rank, bytes)`
// writes it out) outside `writable(rank)`, and its guards are intact.
template <typename Original, typename Writable>
std::string check_unchanged(const std::vector<Guarded>& send, Original original, Writable writable) {
  for (size_t rank = 0; rank < send.size(); ++rank) {
    std::vector<unsigned char> expected(send[rank].size());
    original(static_cast<int>(rank), expected.data());
    const Range skip = writable(static_cast<int>(rank));
    const unsigned char* got = send[rank].data();
    if (!std::equal(got, got + skip.from, expected.begin()) ||
        !std::equal(got + skip.to, got + expected.size(), expected.begin() + static_cast<ptrdiff_t>(skip.to))) {
      return tutti::concat("rank ", rank, "'s send buffer was written");
    }
  }
  return check_guards(send, "send");
}

auto typed_input(Dtype dtype, size_t count) {
  return [=](int rank, unsigned char* out) { rank_data::fill_input(dtype, rank, out, count); };
}
auto byte_input(size_t bytes) {
  return [=](int rank, unsigned char* out) {
    for (size_t i = 0; i < bytes; ++i) out[i] = rank_data::input_byte(rank, i);
  };
}
Range nothing_writable(int) { return Range{}; }

// ---------------------------------------------------------------- reductions

using AllReduceFn = void (*)(Exchange&, const void*, void*, size_t, Dtype, ReduceOp);
using ReduceFn = void (*)(Exchange&, const void*, void*, size_t, Dtype, ReduceOp, int);
using ReduceScatterFn = AllReduceFn;

void run_all_reduce(const char* name, AllReduceFn fn, ScratchLimit limit, int size, size_t count, Case c,
                    const Expected& expected, bool in_place) {
  const size_t bytes = count * dtype_size(c.dtype);
  std::vector<Guarded> send = inputs(size, c.dtype, count);
  std::vector<Guarded> recv = outputs(size, bytes);
  std::vector<Guarded>& result = in_place ? send : recv;
  auto outcomes = run_ranks(
      size, [&](int rank, Exchange& x) { fn(x, send[rank].data(), result[rank].data(), count, c.dtype, c.op); });
  const std::string what = describe(name, size, count, case_name(c).c_str(), -1, in_place);
  require(what, check_outcomes(outcomes, limit(size, count, dtype_size(c.dtype))));
  for (int rank = 0; rank < size; ++rank) {
    require(tutti::concat(what, ", rank ", rank),
            rank_data::check_reduction(c.dtype, expected, result[rank].data(), 0, count));
    // Every rank must end with the same bits, not just close values.
    const bool same = std::equal(result[rank].data(), result[rank].data() + bytes, result[0].data());
    require(what, same ? "" : tutti::concat("rank ", rank, "'s result differs from rank 0's"));
  }
  require(what, check_guards(result, "recv"));
  if (!in_place) require(what, check_unchanged(send, typed_input(c.dtype, count), nothing_writable));
}

void check_all_reduce(const char* name, AllReduceFn fn, ScratchLimit limit) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (Case c : kCases) {
        const Expected expected = rank_data::expected_reduction(c.dtype, c.op, size, count);
        for (bool in_place : {false, true}) run_all_reduce(name, fn, limit, size, count, c, expected, in_place);
      }
    }
  }
}

void run_reduce(const char* name, ReduceFn fn, ScratchLimit limit, int size, size_t count, Case c,
                const Expected& expected, int root, bool in_place) {
  const size_t bytes = count * dtype_size(c.dtype);
  std::vector<Guarded> send = inputs(size, c.dtype, count);
  Guarded recv(bytes);
  void* result = in_place ? send[root].data() : recv.data();
  auto outcomes = run_ranks(size, [&](int rank, Exchange& x) {
    // recv is not used off the root: null there proves it.
    fn(x, send[rank].data(), rank == root ? result : nullptr, count, c.dtype, c.op, root);
  });
  const std::string what = describe(name, size, count, case_name(c).c_str(), root, in_place);
  require(what, check_outcomes(outcomes, limit(size, count, dtype_size(c.dtype))));
  require(what, rank_data::check_reduction(c.dtype, expected, result, 0, count));
  require(what, recv.guards_intact() ? "" : "the root wrote outside its recv buffer");
  require(what, check_unchanged(send, typed_input(c.dtype, count), [&](int rank) {
            return in_place && rank == root ? Range{0, bytes} : Range{};
          }));
}

void check_reduce(const char* name, ReduceFn fn, ScratchLimit limit) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (Case c : kCases) {
        const Expected expected = rank_data::expected_reduction(c.dtype, c.op, size, count);
        for (int root : roots_for(size)) {
          for (bool in_place : {false, true}) run_reduce(name, fn, limit, size, count, c, expected, root, in_place);
        }
      }
    }
  }
}

void run_reduce_scatter(const char* name, ReduceScatterFn fn, ScratchLimit limit, int size, size_t count, Case c,
                        const Expected& expected, bool in_place) {
  const size_t block = count * dtype_size(c.dtype);
  std::vector<Guarded> send = inputs(size, c.dtype, count * size);
  std::vector<Guarded> recv = outputs(size, block);
  auto outcomes = run_ranks(size, [&](int rank, Exchange& x) {
    void* out = in_place ? send[rank].data() + rank * block : recv[rank].data();
    fn(x, send[rank].data(), out, count, c.dtype, c.op);
  });
  const std::string what = describe(name, size, count, case_name(c).c_str(), -1, in_place);
  require(what, check_outcomes(outcomes, limit(size, count, dtype_size(c.dtype))));
  for (int rank = 0; rank < size; ++rank) {
    const void* got = in_place ? send[rank].data() + rank * block : recv[rank].data();
    require(tutti::concat(what, ", rank ", rank),
            rank_data::check_reduction(c.dtype, expected, got, rank * count, count));
  }
  require(what, check_guards(recv, "recv"));
  require(what, check_unchanged(send, typed_input(c.dtype, count * size), [&](int rank) {
            return in_place ? Range{rank * block, (rank + 1) * block} : Range{};
          }));
}

void check_reduce_scatter(const char* name, ReduceScatterFn fn, ScratchLimit limit) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (Case c : kCases) {
        const Expected expected = rank_data::expected_reduction(c.dtype, c.op, size, count * size);
        for (bool in_place : {false, true}) run_reduce_scatter(name, fn, limit, size, count, c, expected, in_place);
      }
    }
  }
}

// ---------------------------------------------------------------- data movement

using BroadcastFn = void (*)(Exchange&, void*, size_t, int);
using AllGatherFn = void (*)(Exchange&, const void*, void*, size_t);
using RootedFn = void (*)(Exchange&, const void*, void*, size_t, int);
using AllToAllFn = AllGatherFn;

void check_broadcast(const char* name, BroadcastFn fn) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (size_t element : kElementBytes) {
        const size_t bytes = count * element;
        for (int root : roots_for(size)) {
          // The root's buffer holds its input (the caller copies send there); the
          // others' hold a pattern the data must replace.
          std::vector<Guarded> buffers = outputs(size, bytes);
          for (size_t i = 0; i < bytes; ++i) buffers[root].data()[i] = rank_data::input_byte(root, i);
          auto outcomes = run_ranks(size, [&](int rank, Exchange& x) { fn(x, buffers[rank].data(), bytes, root); });
          const std::string what =
              describe(name, size, count, tutti::concat(element, "-byte elements").c_str(), root, false);
          require(what, check_outcomes(outcomes, 0));
          for (int rank = 0; rank < size; ++rank) {
            require(what, check_bytes(buffers[rank].data(), bytes, root, 0, tutti::concat("rank ", rank).c_str()));
          }
          require(what, check_guards(buffers, "recv"));
        }
      }
    }
  }
}

void check_all_gather(const char* name, AllGatherFn fn) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (size_t element : kElementBytes) {
        const size_t block = count * element;
        for (bool in_place : {false, true}) {
          std::vector<Guarded> send = byte_inputs(size, block);
          std::vector<Guarded> recv = outputs(size, block * size);
          if (in_place) {
            for (int rank = 0; rank < size; ++rank) {
              std::copy_n(send[rank].data(), block, recv[rank].data() + rank * block);
            }
          }
          auto outcomes = run_ranks(size, [&](int rank, Exchange& x) {
            fn(x, in_place ? recv[rank].data() + rank * block : send[rank].data(), recv[rank].data(), block);
          });
          const std::string what =
              describe(name, size, count, tutti::concat(element, "-byte elements").c_str(), -1, in_place);
          require(what, check_outcomes(outcomes, 0));
          for (int rank = 0; rank < size; ++rank) {
            for (int from = 0; from < size; ++from) {
              require(what, check_bytes(recv[rank].data() + from * block, block, from, 0,
                                        tutti::concat("rank ", rank, "'s block ", from).c_str()));
            }
          }
          require(what, check_guards(recv, "recv"));
          if (!in_place) require(what, check_unchanged(send, byte_input(block), nothing_writable));
        }
      }
    }
  }
}

void check_gather(const char* name, RootedFn fn, ScratchLimit limit) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (size_t element : kElementBytes) {
        const size_t block = count * element;
        for (int root : roots_for(size)) {
          for (bool in_place : {false, true}) {
            std::vector<Guarded> send = byte_inputs(size, block);
            Guarded recv(block * size);
            if (in_place) std::copy_n(send[root].data(), block, recv.data() + root * block);
            auto outcomes = run_ranks(size, [&](int rank, Exchange& x) {
              const void* mine = in_place && rank == root ? recv.data() + root * block : send[rank].data();
              fn(x, mine, rank == root ? recv.data() : nullptr, block, root);
            });
            const std::string what =
                describe(name, size, count, tutti::concat(element, "-byte elements").c_str(), root, in_place);
            require(what, check_outcomes(outcomes, limit(size, block, 1)));
            for (int from = 0; from < size; ++from) {
              require(what,
                      check_bytes(recv.data() + from * block, block, from, 0, tutti::concat("block ", from).c_str()));
            }
            require(what, recv.guards_intact() ? "" : "the root wrote outside its recv buffer");
            require(what, check_unchanged(send, byte_input(block), nothing_writable));
          }
        }
      }
    }
  }
}

void check_scatter(const char* name, RootedFn fn, ScratchLimit limit) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (size_t element : kElementBytes) {
        const size_t block = count * element;
        for (int root : roots_for(size)) {
          for (bool in_place : {false, true}) {
            std::vector<Guarded> send = byte_inputs(size, block * size);
            std::vector<Guarded> recv = outputs(size, block);
            auto outcomes = run_ranks(size, [&](int rank, Exchange& x) {
              // send is not used off the root: null there proves it.
              void* out = in_place && rank == root ? send[root].data() + root * block : recv[rank].data();
              fn(x, rank == root ? send[root].data() : nullptr, out, block, root);
            });
            const std::string what =
                describe(name, size, count, tutti::concat(element, "-byte elements").c_str(), root, in_place);
            require(what, check_outcomes(outcomes, limit(size, block, 1)));
            for (int rank = 0; rank < size; ++rank) {
              const unsigned char* got =
                  in_place && rank == root ? send[root].data() + root * block : recv[rank].data();
              require(what, check_bytes(got, block, root, rank * block, tutti::concat("rank ", rank).c_str()));
            }
            require(what, check_guards(recv, "recv"));
            require(what, check_unchanged(send, byte_input(block * size), nothing_writable));
          }
        }
      }
    }
  }
}

void check_all_to_all(const char* name, AllToAllFn fn) {
  for (int size : kSizes) {
    for (size_t count : kCounts) {
      for (size_t element : kElementBytes) {
        const size_t block = count * element;
        std::vector<Guarded> send = byte_inputs(size, block * size);
        std::vector<Guarded> recv = outputs(size, block * size);
        auto outcomes =
            run_ranks(size, [&](int rank, Exchange& x) { fn(x, send[rank].data(), recv[rank].data(), block); });
        const std::string what =
            describe(name, size, count, tutti::concat(element, "-byte elements").c_str(), -1, false);
        require(what, check_outcomes(outcomes, 0));
        for (int rank = 0; rank < size; ++rank) {
          for (int from = 0; from < size; ++from) {
            require(what, check_bytes(recv[rank].data() + from * block, block, from, rank * block,
                                      tutti::concat("rank ", rank, "'s block ", from).c_str()));
          }
        }
        require(what, check_guards(recv, "recv"));
        require(what, check_unchanged(send, byte_input(block * size), nothing_writable));
      }
    }
  }
}

}  // namespace

Test(algorithms, all_reduce_ring, .timeout = 120) {
  check_all_reduce("all_reduce_ring", tutti::collectives::all_reduce_ring, two_ring_blocks);
}
Test(algorithms, all_reduce_recursive_doubling, .timeout = 120) {
  check_all_reduce("all_reduce_recursive_doubling", tutti::collectives::all_reduce_recursive_doubling, one_chunk_limit);
}
Test(algorithms, all_reduce_rabenseifner, .timeout = 120) {
  check_all_reduce("all_reduce_rabenseifner", tutti::collectives::all_reduce_rabenseifner, one_chunk_limit);
}
Test(algorithms, reduce_binomial, .timeout = 120) {
  check_reduce("reduce_binomial", tutti::collectives::reduce_binomial, two_chunks_limit);
}
Test(algorithms, reduce_ring, .timeout = 120) {
  check_reduce("reduce_ring", tutti::collectives::reduce_ring, two_ring_blocks);
}
Test(algorithms, reduce_scatter_ring, .timeout = 120) {
  check_reduce_scatter("reduce_scatter_ring", tutti::collectives::reduce_scatter_ring, two_blocks_limit);
}
Test(algorithms, reduce_scatter_pairwise, .timeout = 120) {
  check_reduce_scatter("reduce_scatter_pairwise", tutti::collectives::reduce_scatter_pairwise, one_block_limit);
}
Test(algorithms, reduce_scatter_recursive_halving, .timeout = 120) {
  check_reduce_scatter("reduce_scatter_recursive_halving", tutti::collectives::reduce_scatter_recursive_halving,
                       vector_and_chunk_limit);
}
Test(algorithms, broadcast_binomial, .timeout = 60) {
  check_broadcast("broadcast_binomial", tutti::collectives::broadcast_binomial);
}
Test(algorithms, broadcast_scatter_all_gather, .timeout = 60) {
  check_broadcast("broadcast_scatter_all_gather", tutti::collectives::broadcast_scatter_all_gather);
}
Test(algorithms, all_gather_ring, .timeout = 60) {
  check_all_gather("all_gather_ring", tutti::collectives::all_gather_ring);
}
Test(algorithms, all_gather_bruck, .timeout = 60) {
  check_all_gather("all_gather_bruck", tutti::collectives::all_gather_bruck);
}
Test(algorithms, all_gather_recursive_doubling, .timeout = 60) {
  check_all_gather("all_gather_recursive_doubling", tutti::collectives::all_gather_recursive_doubling);
}
Test(algorithms, gather_linear, .timeout = 60) {
  check_gather("gather_linear", tutti::collectives::gather_linear, no_scratch);
}
Test(algorithms, gather_binomial, .timeout = 60) {
  check_gather("gather_binomial", tutti::collectives::gather_binomial, half_the_ranks);
}
Test(algorithms, scatter_linear, .timeout = 60) {
  check_scatter("scatter_linear", tutti::collectives::scatter_linear, no_scratch);
}
Test(algorithms, scatter_binomial, .timeout = 60) {
  check_scatter("scatter_binomial", tutti::collectives::scatter_binomial, half_the_ranks);
}
Test(algorithms, all_to_all_pairwise, .timeout = 60) {
  check_all_to_all("all_to_all_pairwise", tutti::collectives::all_to_all_pairwise);
}
Test(algorithms, all_to_all_linear, .timeout = 60) {
  check_all_to_all("all_to_all_linear", tutti::collectives::all_to_all_linear);
}

// No rank may leave before every rank has entered: each rank counts itself in, one
// rank arrives late, and every rank must see the full count once out.
Test(algorithms, barrier_dissemination, .timeout = 60) {
  for (int size : kSizes) {
    for (int late = 0; late < size; ++late) {
      std::atomic<int> arrived{0};
      std::vector<int> seen(static_cast<size_t>(size), -1);
      auto outcomes = run_ranks(size, [&](int rank, Exchange& x) {
        if (rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ++arrived;
        tutti::collectives::barrier_dissemination(x);
        seen[static_cast<size_t>(rank)] = arrived.load();
      });
      const std::string what = tutti::concat("barrier_dissemination with ", size, " ranks, rank ", late, " late");
      require(what, check_outcomes(outcomes, 0));
      for (int rank = 0; rank < size; ++rank) {
        cr_assert_eq(seen[static_cast<size_t>(rank)], size, "%s: rank %d left after %d of %d ranks had arrived",
                     what.c_str(), rank, seen[static_cast<size_t>(rank)], size);
      }
    }
  }
}

// Vectors of several chunks (kChunkBytes), for the algorithms that move them chunk by
// chunk, and for the ring ones at a size where a block is larger than a chunk.
Test(algorithms, vectors_of_several_chunks, .timeout = 120) {
  const size_t count = 3 * tutti::collectives::chunk_elements(8) + 5;
  const Case cases[] = {
      {Dtype::kFloat64, ReduceOp::kSum}, {Dtype::kFloat64, ReduceOp::kAvg}, {Dtype::kInt32, ReduceOp::kSum}};
  for (int size : {3, 8}) {
    for (Case c : cases) {
      const Expected expected = rank_data::expected_reduction(c.dtype, c.op, size, count);
      for (bool in_place : {false, true}) {
        run_all_reduce("all_reduce_recursive_doubling", tutti::collectives::all_reduce_recursive_doubling,
                       one_chunk_limit, size, count, c, expected, in_place);
        run_all_reduce("all_reduce_ring", tutti::collectives::all_reduce_ring, two_ring_blocks, size, count, c,
                       expected, in_place);
        run_reduce("reduce_binomial", tutti::collectives::reduce_binomial, two_chunks_limit, size, count, c, expected,
                   1, in_place);
        run_reduce("reduce_ring", tutti::collectives::reduce_ring, two_ring_blocks, size, count, c, expected, 1,
                   in_place);
      }
    }
  }
}
