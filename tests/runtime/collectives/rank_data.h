// The data the algorithm tests feed in and the results they expect, computed here
// independently of the algorithms: each rank's input (small integers from a hash of
// rank and index, exact in every dtype, so that sums and products over 8 ranks are
// exact too and only AVG's division rounds), the reduction of element i over all
// ranks, and buffers with guard zones that show any write outside them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/operation/dtype.h"
#include "runtime/operation/reduce_op.h"

namespace rank_data {

using tutti::Dtype;
using tutti::ReduceOp;

// Mixes rank and index so that a block delivered to the wrong place, or from the wrong
// rank, differs from the right one whatever the block sizes.
inline uint32_t mix(int rank, size_t i) {
  uint32_t h = static_cast<uint32_t>(rank) * 0x9E3779B1u ^ static_cast<uint32_t>(i) * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return h;
}

inline bool is_fp8(Dtype dtype) { return dtype == Dtype::kFloat8E4m3 || dtype == Dtype::kFloat8E5m2; }

inline bool is_float(Dtype dtype) {
  return dtype == Dtype::kFloat16 || dtype == Dtype::kBfloat16 || dtype == Dtype::kFloat32 ||
         dtype == Dtype::kFloat64 || is_fp8(dtype);
}

// Element i of rank's input: an integer in [-5, 5] ([0, 10] for uint8), times 3/8 for
// the float types (1/4 for fp8, whose 3 bits of e5m2 hold 5 but not 15).
inline double input_value(Dtype dtype, int rank, size_t i) {
  int small = static_cast<int>(mix(rank, i) % 11) - 5;
  if (dtype == Dtype::kUint8) return small + 5;
  if (is_fp8(dtype)) return small * 0.25;
  return is_float(dtype) ? small * 0.375 : small;
}

inline void store(Dtype dtype, double value, void* at) {
  auto put = [&](auto typed) { std::memcpy(at, &typed, sizeof(typed)); };
  switch (dtype) {
    case Dtype::kInt8: return put(static_cast<int8_t>(value));
    case Dtype::kUint8: return put(static_cast<uint8_t>(value));
    case Dtype::kInt32: return put(static_cast<int32_t>(value));
    case Dtype::kInt64: return put(static_cast<int64_t>(value));
    case Dtype::kFloat16: return put(tutti::float_to_half(static_cast<float>(value)));
    case Dtype::kBfloat16: return put(tutti::float_to_bfloat16(static_cast<float>(value)));
    case Dtype::kFloat32: return put(static_cast<float>(value));
    case Dtype::kFloat64: return put(value);
    case Dtype::kFloat8E4m3: return put(tutti::float_to_float8_e4m3(static_cast<float>(value)));
    case Dtype::kFloat8E5m2: return put(tutti::float_to_float8_e5m2(static_cast<float>(value)));
  }
}

inline double load(Dtype dtype, const void* at) {
  auto get = [&](auto typed) {
    std::memcpy(&typed, at, sizeof(typed));
    return typed;
  };
  switch (dtype) {
    case Dtype::kInt8: return get(int8_t{});
    case Dtype::kUint8: return get(uint8_t{});
    case Dtype::kInt32: return get(int32_t{});
    case Dtype::kInt64: return static_cast<double>(get(int64_t{}));
    case Dtype::kFloat16: return tutti::half_to_float(get(uint16_t{}));
    case Dtype::kBfloat16: return tutti::bfloat16_to_float(get(uint16_t{}));
    case Dtype::kFloat32: return get(float{});
    case Dtype::kFloat64: return get(double{});
    case Dtype::kFloat8E4m3: return tutti::float8_e4m3_to_float(get(uint8_t{}));
    case Dtype::kFloat8E5m2: return tutti::float8_e5m2_to_float(get(uint8_t{}));
  }
  return 0;
}

// Rank's whole input of `count` elements, encoded in dtype.
inline void fill_input(Dtype dtype, int rank, void* data, size_t count) {
  const size_t element = tutti::dtype_size(dtype);
  for (size_t i = 0; i < count; ++i) store(dtype, input_value(dtype, rank, i), static_cast<char*>(data) + i * element);
}

// Byte i of rank's input, for the collectives that only move bytes.
inline unsigned char input_byte(int rank, size_t i) { return static_cast<unsigned char>(mix(rank, i) >> 8); }

// The reduction over ranks 0 .. size - 1 of every element, and how far a result may
// be from it, computed once per case and checked against every rank's result.
struct Expected {
  std::vector<double> values;
  std::vector<double> tolerances;
};

// AVG divides once (truncating for integers, as C does). Floats may be off by the
// dtype's rounding once per rank that added in (and once for AVG's division),
// relative to the magnitudes summed; integers are exact.
inline Expected expected_reduction(Dtype dtype, ReduceOp op, int size, size_t count) {
  double epsilon = 0;
  switch (dtype) {
    case Dtype::kFloat16: epsilon = std::ldexp(1.0, -10); break;
    case Dtype::kBfloat16: epsilon = std::ldexp(1.0, -7); break;
    case Dtype::kFloat32: epsilon = std::ldexp(1.0, -23); break;
    case Dtype::kFloat64: epsilon = std::ldexp(1.0, -52); break;
    case Dtype::kFloat8E4m3: epsilon = std::ldexp(1.0, -3); break;
    case Dtype::kFloat8E5m2: epsilon = std::ldexp(1.0, -2); break;
    default: break;
  }
  Expected expected;
  expected.values.resize(count);
  expected.tolerances.resize(count);
  for (size_t i = 0; i < count; ++i) {
    double result = input_value(dtype, 0, i);
    double magnitude = std::fabs(result);
    for (int rank = 1; rank < size; ++rank) {
      double value = input_value(dtype, rank, i);
      magnitude += std::fabs(value);
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAvg: result += value; break;
        case ReduceOp::kProd: result *= value; break;
        case ReduceOp::kMin: result = std::min(result, value); break;
        case ReduceOp::kMax: result = std::max(result, value); break;
      }
    }
    if (op == ReduceOp::kAvg) result = is_float(dtype) ? result / size : std::trunc(result / size);
    expected.values[i] = result;
    expected.tolerances[i] = epsilon * (size + 1) * magnitude;
  }
  return expected;
}

// "" when elements [first, first + n) of the reduction sit at `got` (element `first`
// at got[0]), else what is wrong with the first one that does not.
inline std::string check_reduction(Dtype dtype, const Expected& expected, const void* got, size_t first, size_t n) {
  const size_t element = tutti::dtype_size(dtype);
  for (size_t k = 0; k < n; ++k) {
    const size_t i = first + k;
    double value = load(dtype, static_cast<const char*>(got) + k * element);
    if (!(std::fabs(value - expected.values[i]) <= expected.tolerances[i])) {
      return tutti::concat("element ", i, " is ", value, " where ", expected.values[i], " was expected");
    }
  }
  return "";
}

// A buffer with a guard zone on each side, filled with a pattern that the test checks
// afterwards: an algorithm that writes outside what it was given shows up here.
class Guarded {
 public:
  explicit Guarded(size_t bytes, unsigned char fill = 0xCD) : bytes_(bytes), storage_(bytes + 2 * kGuard, kGuardByte) {
    std::fill_n(data(), bytes, fill);
  }
  unsigned char* data() { return storage_.data() + kGuard; }
  const unsigned char* data() const { return storage_.data() + kGuard; }
  size_t size() const { return bytes_; }
  bool guards_intact() const {
    auto untouched = [](unsigned char b) { return b == kGuardByte; };
    return std::all_of(storage_.begin(), storage_.begin() + kGuard, untouched) &&
           std::all_of(storage_.end() - kGuard, storage_.end(), untouched);
  }

 private:
  // 64 bytes keeps data() as aligned as the allocation, so typed kernels see the
  // alignment a user's buffer would have.
  static constexpr size_t kGuard = 64;
  static constexpr unsigned char kGuardByte = 0xA5;
  size_t bytes_;
  std::vector<unsigned char> storage_;
};

}  // namespace rank_data
