// The OCP 8-bit floats (float8_e4m3, float8_e5m2) <-> float32, one value at a time
// (declared in reduce_op.h). These define the results of every fp8 reduction.
//
// e4m3 ("fn": finite, as NCCL, CUDA and torch's float8_e4m3fn): bias 7, no infinities,
// one NaN per sign (S.1111.111), largest finite 448. e5m2: bias 15, the upper byte of an
// IEEE binary16, with infinities and NaNs; largest finite 57344.
//
// float32 -> fp8 rounds to nearest even and saturates: a result beyond the largest
// finite value, infinity included, becomes the largest finite value of its sign. That
// is CUDA's __NV_SATFINITE conversion, which NCCL's fp8 reductions (2.24 and later)
// use, so a reduction gives the same kind of result on the host and through NCCL. NaN
// stays NaN (e5m2 quiet, with the top of the payload).
#include <bit>
#include <cstdint>

#include "runtime/operation/float_bits.h"
#include "runtime/operation/reduce_op.h"

namespace tutti {

namespace {

// |value| (float32 bits `magnitude`, not NaN) as an fp8 of Layout's kMantissa bits and
// kBias, rounded to nearest even and saturated at kLargest (the largest finite code).
template <class Layout>
uint8_t narrow_magnitude(uint32_t magnitude) {
  constexpr int kMantissa = Layout::kMantissa;
  constexpr int kBias = Layout::kBias;
  constexpr uint32_t kLargest = Layout::kLargest;
  constexpr int kDropped = 23 - kMantissa;
  constexpr uint32_t kSmallestNormal = static_cast<uint32_t>(127 + 1 - kBias) << 23;
  if (magnitude >= kSmallestNormal) {
    // Rebias the exponent and round the dropped bits to nearest even; a carry out of
    // the mantissa bumps the exponent, and anything past kLargest (inf too) saturates.
    const uint32_t odd = (magnitude >> kDropped) & 1;
    const uint32_t rounded =
        (magnitude - (static_cast<uint32_t>(127 - kBias) << 23) + (1u << (kDropped - 1)) - 1 + odd) >> kDropped;
    return static_cast<uint8_t>(rounded < kLargest ? rounded : kLargest);
  }
  // Subnormal in fp8, in units of 2^(1 - kBias - kMantissa). Below half a unit
  // everything rounds to zero, and half a unit itself is a tie that goes to the even
  // zero. A count that rounds up to 2^kMantissa is the smallest normal, which these
  // same bits spell.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t shift = 151 - kBias - kMantissa - exponent;
  if (shift > 24) return 0;
  const uint32_t significand = (magnitude & 0x7fffff) | 0x800000;
  uint32_t result = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (result & 1) != 0)) ++result;
  return static_cast<uint8_t>(result);
}

}  // namespace

float float8_e4m3_to_float(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80) << 24;
  const uint32_t exponent = (bits >> 3) & 0xf;
  const uint32_t mantissa = bits & 0x7;
  if ((bits & 0x7f) == 0x7f) return std::bit_cast<float>(sign | 0x7fc00000);
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-9 is exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-9f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 120) << 23) | (mantissa << 20));
}

uint8_t float_to_float8_e4m3(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t magnitude = bits & ~kFloatSignBit;
  if (magnitude > kFloatInf) return static_cast<uint8_t>(sign | 0x7f);
  return static_cast<uint8_t>(sign | narrow_magnitude<Float8E4m3Layout>(magnitude));
}

float float8_e5m2_to_float(uint8_t bits) { return half_to_float(static_cast<uint16_t>(bits << 8)); }

uint8_t float_to_float8_e5m2(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t magnitude = bits & ~kFloatSignBit;
  if (magnitude > kFloatInf) {
    // Quiet, with the payload's top bit: one only in the dropped bits would otherwise
    // come out as inf.
    return static_cast<uint8_t>(sign | 0x7e | ((magnitude >> 21) & 1));
  }
  return static_cast<uint8_t>(sign | narrow_magnitude<Float8E5m2Layout>(magnitude));
}

}  // namespace tutti
