// The float32 fields that the narrow-float conversions (half.cc, float8.cc, and
// reduce_op.cc's vector kernels) take apart, and the 8-bit formats' own.
#pragma once

#include <cstdint>

namespace tutti {

constexpr uint32_t kFloatSignBit = 0x80000000;
constexpr uint32_t kFloatInf = 0x7f800000;  // the exponent field, all ones
constexpr uint32_t kFloatQuietBit = 0x00400000;

// The OCP 8-bit floats: mantissa bits, exponent bias, the largest finite code (where a
// rounded result saturates), and whether the format has infinities (e5m2, a binary16's
// upper byte, does and keeps a NaN's top payload bit; e4m3 has one NaN per sign).
struct Float8E4m3Layout {
  static constexpr int kMantissa = 3;
  static constexpr int kBias = 7;
  static constexpr uint32_t kLargest = 0x7e;
  static constexpr bool kHasInfinities = false;
};
struct Float8E5m2Layout {
  static constexpr int kMantissa = 2;
  static constexpr int kBias = 15;
  static constexpr uint32_t kLargest = 0x7b;
  static constexpr bool kHasInfinities = true;
};

}  // namespace tutti
