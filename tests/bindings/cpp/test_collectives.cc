// Every collective and send/recv through the C++ wrapper, blocking, on every rank,
// with containers of several kinds (std::vector, std::array, C arrays, pointer and
// count) and every dtype, each result worked out here from what every rank sent.
//   tutti launch -n 3 -- build/tests/bindings.cpp.test_collectives
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tests/bindings/cpp/check.hpp"
#include "tutti/tutti.hpp"

namespace {

// What rank r puts at index i of block j of its send buffer, for every collective here.
int64_t value(int r, int j, int i) { return r * 100 + j * 10 + i; }

template <class T>
std::vector<T> block(int r, int j, int count) {
  std::vector<T> out;
  for (int i = 0; i < count; ++i) out.push_back(static_cast<T>(value(r, j, i)));
  return out;
}

// The blocks 0..blocks-1 of rank r, one after the other.
template <class T>
std::vector<T> blocks(int r, int blocks, int count) {
  std::vector<T> out;
  for (int j = 0; j < blocks; ++j) {
    for (T v : block<T>(r, j, count)) out.push_back(v);
  }
  return out;
}

void all_reduce(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<int32_t> sum(4), expected_sum(4, 0);
  std::vector<double> prod(4), expected_prod(4, 1);
  std::vector<int64_t> max(4), expected_max(4, INT64_MIN), min(4), expected_min(4, INT64_MAX);
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < 4; ++i) {
      expected_sum[i] += static_cast<int32_t>(value(r, 0, i));
      expected_prod[i] *= static_cast<double>(r + 1 + i) / 2;
      expected_max[i] = std::max(expected_max[i], (r % 2 ? 1 : -1) * value(r, 0, i));
      expected_min[i] = std::min(expected_min[i], (r % 2 ? 1 : -1) * value(r, 0, i));
    }
  }
  const std::vector<int32_t> mine = block<int32_t>(rank, 0, 4);
  world.all_reduce(mine, sum, TUTTI_OP_SUM);
  check::equal(sum, expected_sum, "all_reduce int32 sum");

  std::vector<double> factors;
  for (int i = 0; i < 4; ++i) factors.push_back(static_cast<double>(rank + 1 + i) / 2);
  world.all_reduce(factors, prod, TUTTI_OP_PROD);
  check::equal(prod, expected_prod, "all_reduce float64 prod", 1e-12);

  std::vector<int64_t> signed_values = block<int64_t>(rank, 0, 4);
  for (int64_t& v : signed_values) v *= rank % 2 ? 1 : -1;
  world.all_reduce(signed_values, max, TUTTI_OP_MAX);
  world.all_reduce(signed_values, min, TUTTI_OP_MIN);
  check::equal(max, expected_max, "all_reduce int64 max");
  check::equal(min, expected_min, "all_reduce int64 min");

  // In place, on a std::array of float: the average of rank + i.
  std::array<float, 3> mean = {float(rank), float(rank + 1), float(rank + 2)};
  world.all_reduce(mean, TUTTI_OP_AVG);
  const float average = static_cast<float>(size - 1) / 2;
  check::equal(std::vector<float>(mean.begin(), mean.end()), {average, average + 1, average + 2},
               "all_reduce float32 avg in place", 1e-6);
}

// The 16-bit floats, on values they hold exactly: rank + 1 + i / 2, summed.
void all_reduce_16_bit_floats(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<tutti::Float16> half;
  std::vector<tutti::BFloat16> brain;
  std::vector<float> expected;
  for (int i = 0; i < 5; ++i) {
    const float mine = static_cast<float>(rank + 1) + static_cast<float>(i) / 2;
    half.push_back(tutti::Float16::from_float(mine));
    brain.push_back(tutti::BFloat16::from_float(mine));
    expected.push_back(static_cast<float>(size * (size + 1) / 2) + static_cast<float>(size * i) / 2);
  }
  world.all_reduce(half, TUTTI_OP_SUM);
  world.all_reduce(brain, TUTTI_OP_SUM);
  std::vector<float> half_sum, brain_sum;
  for (tutti::Float16 h : half) half_sum.push_back(h.to_float());
  for (tutti::BFloat16 b : brain) brain_sum.push_back(b.to_float());
  check::equal(half_sum, expected, "all_reduce float16 sum");
  check::equal(brain_sum, expected, "all_reduce bfloat16 sum");

  // Raw uint16_t storage of bfloat16 bits, its dtype given by hand.
  std::vector<uint16_t> bits(2, tutti::BFloat16::from_float(1.5f).bits);
  world.all_reduce(tutti::Buffer(bits.data(), bits.size(), TUTTI_DTYPE_BFLOAT16), TUTTI_OP_MAX);
  CHECK(tutti::BFloat16{bits[0]}.to_float() == 1.5f && tutti::BFloat16{bits[1]}.to_float() == 1.5f,
        "all_reduce max of raw bfloat16 bits");
}

void reduce(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size(), root = size - 1;
  std::vector<int8_t> expected(3, 0);
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < 3; ++i) expected[i] = static_cast<int8_t>(expected[i] + r + i);
  }
  const int8_t mine[3] = {int8_t(rank), int8_t(rank + 1), int8_t(rank + 2)};
  std::vector<int8_t> out(3, -1);
  // Off the root, recv is not used and may be left out.
  world.reduce(mine, rank == root ? tutti::Buffer(out) : tutti::Buffer{}, TUTTI_OP_SUM, root);
  check::equal(out, rank == root ? expected : std::vector<int8_t>(3, -1), "reduce int8 sum to the last rank");

  // In place: the root's buffer becomes the reduction, the others keep theirs.
  std::vector<uint8_t> data = {uint8_t(rank + 1), uint8_t(2 * rank)};
  world.reduce(data, TUTTI_OP_MAX, 0);
  check::equal(data,
               rank == 0 ? std::vector<uint8_t>{uint8_t(size), uint8_t(2 * (size - 1))}
                         : std::vector<uint8_t>{uint8_t(rank + 1), uint8_t(2 * rank)},
               "reduce uint8 max in place to rank 0");
}

void broadcast(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size(), root = size - 1;
  const std::vector<double> mine = block<double>(rank, 0, 6);
  std::vector<double> out(6, -1);
  world.broadcast(rank == root ? tutti::ConstBuffer(mine) : tutti::ConstBuffer{}, out, root);
  check::equal(out, block<double>(root, 0, 6), "broadcast float64 from the last rank");

  int32_t data[4];
  for (int i = 0; i < 4; ++i) data[i] = static_cast<int32_t>(value(rank, 0, i));
  world.broadcast(data, 0);
  check::equal(std::vector<int32_t>(data, data + 4), block<int32_t>(0, 0, 4), "broadcast int32 in place");
}

void all_gather(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<float> out(static_cast<size_t>(size) * 2), expected;
  for (int r = 0; r < size; ++r) {
    for (float v : block<float>(r, 0, 2)) expected.push_back(v);
  }
  const std::vector<float> mine = block<float>(rank, 0, 2);
  world.all_gather(mine, out);
  check::equal(out, expected, "all_gather float32");
}

void reduce_scatter(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  // Every rank sends size blocks of 3; rank j keeps the sum of everyone's block j.
  std::vector<int64_t> out(3), expected(3, 0);
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < 3; ++i) expected[i] += value(r, rank, i);
  }
  const std::vector<int64_t> mine = blocks<int64_t>(rank, size, 3);
  world.reduce_scatter(mine, out, TUTTI_OP_SUM);
  check::equal(out, expected, "reduce_scatter int64 sum");
}

void gather(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<int32_t> out(static_cast<size_t>(size) * 2, -1), expected;
  for (int r = 0; r < size; ++r) {
    for (int32_t v : block<int32_t>(r, 0, 2)) expected.push_back(v);
  }
  const std::vector<int32_t> mine = block<int32_t>(rank, 0, 2);
  // A pointer and a count, through the constructor rather than a container.
  world.gather(tutti::ConstBuffer(mine.data(), mine.size()), rank == 0 ? tutti::Buffer(out) : tutti::Buffer{}, 0);
  check::equal(out, rank == 0 ? expected : std::vector<int32_t>(out.size(), -1), "gather int32 to rank 0");
}

void scatter(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size(), root = size / 2;
  const std::vector<double> all = blocks<double>(root, size, 4);
  std::vector<double> out(4);
  world.scatter(rank == root ? tutti::ConstBuffer(all) : tutti::ConstBuffer{}, out, root);
  check::equal(out, block<double>(root, rank, 4), "scatter float64 from the middle rank");
}

void all_to_all(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  // Block j of rank r goes to rank j: rank `rank` receives block `rank` of every rank.
  std::vector<int32_t> out(static_cast<size_t>(size) * 2), expected;
  for (int r = 0; r < size; ++r) {
    for (int32_t v : block<int32_t>(r, rank, 2)) expected.push_back(v);
  }
  const std::vector<int32_t> mine = blocks<int32_t>(rank, size, 2);
  world.all_to_all(mine, out);
  check::equal(out, expected, "all_to_all int32");
}

// Rank r sends rank j (r + j) % 3 elements of block j (some none), blocking and async.
void all_to_allv(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<size_t> send_counts, recv_counts;
  std::vector<int64_t> mine, expected;
  for (int j = 0; j < size; ++j) {
    send_counts.push_back(static_cast<size_t>((rank + j) % 3));
    for (int64_t v : block<int64_t>(rank, j, (rank + j) % 3)) mine.push_back(v);
    recv_counts.push_back(static_cast<size_t>((j + rank) % 3));
    for (int64_t v : block<int64_t>(j, rank, (j + rank) % 3)) expected.push_back(v);
  }
  std::vector<int64_t> out(expected.size());
  world.all_to_allv(mine, send_counts, out, recv_counts);
  check::equal(out, expected, "all_to_allv int64");
  std::vector<int64_t> again(expected.size());
  world.all_to_allv_async(mine, send_counts, again, recv_counts).wait();
  check::equal(again, expected, "all_to_allv_async int64");
}

// A ring: each rank sends to the next and receives from the one before. Receives are
// posted first, so that blocking sends cannot wait on each other in a circle.
void send_recv(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  const int next = (rank + 1) % size, previous = (rank + size - 1) % size;
  std::vector<float> in(5);
  const std::vector<float> mine = block<float>(rank, 0, 5);
  tutti::Work receiving = world.recv_async(in, previous, 7);
  world.send(mine, next, 7);
  receiving.wait();
  check::equal(in, block<float>(previous, 0, 5), "recv from the previous rank");

  // Blocking on both sides, rank 0 to rank 1, into a larger buffer: a message of at
  // most its size is accepted.
  if (size >= 2 && rank <= 1) {
    std::array<int64_t, 8> buffer{};
    if (rank == 0) {
      const std::array<int64_t, 3> three = {11, 22, 33};
      world.send(three, 1, 9);
    } else {
      world.recv(buffer, 0, 9);
      check::equal(std::vector<int64_t>(buffer.begin(), buffer.begin() + 3), {11, 22, 33}, "blocking recv");
    }
  }
  world.barrier();
}

}  // namespace

int main() {
  return check::run("test_collectives", {
                                            {"all_reduce", all_reduce},
                                            {"all_reduce_16_bit_floats", all_reduce_16_bit_floats},
                                            {"reduce", reduce},
                                            {"broadcast", broadcast},
                                            {"all_gather", all_gather},
                                            {"reduce_scatter", reduce_scatter},
                                            {"gather", gather},
                                            {"scatter", scatter},
                                            {"all_to_all", all_to_all},
                                            {"all_to_allv", all_to_allv},
                                            {"send_recv", send_recv},
                                        });
}
