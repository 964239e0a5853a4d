// IEEE binary16 and bfloat16 <-> float32, one value at a time (declared in
// reduce_op.h). These define the results: the F16C/AVX2 kernels in reduce_op.cc must
// match them bit for bit, and the tests check that they do.
#include <bit>
#include <cstdint>

#include "runtime/operation/float_bits.h"
#include "runtime/operation/reduce_op.h"

namespace tutti {

namespace {

bool is_float_nan(uint32_t bits) { return (bits & ~kFloatSignBit) > kFloatInf; }

}  // namespace

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  const uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {
    // Inf keeps its zero mantissa; a NaN keeps its payload and comes back quiet.
    const uint32_t quiet = mantissa != 0 ? kFloatQuietBit : 0;
    return std::bit_cast<float>(sign | kFloatInf | quiet | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_half(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & ~kFloatSignBit;
  if (magnitude > kFloatInf) {
    // Keep the top of the payload and set the quiet bit: a NaN whose payload lives only
    // in the dropped low bits would otherwise come out as inf.
    return static_cast<uint16_t>(sign | 0x7e00 | ((magnitude >> 13) & 0x1ff));
  }
  if (magnitude >= 0x477ff000) {
    // 65520 is halfway between the largest half (65504) and 65536, and rounds to the
    // even side, which is inf.
    return static_cast<uint16_t>(sign | 0x7c00);
  }
  if (magnitude >= 0x38800000) {
    // Normal in half: rebias the exponent and round away the 13 low mantissa bits to
    // nearest even; a carry out of the mantissa correctly bumps the exponent.
    const uint32_t odd = (magnitude >> 13) & 1;
    return static_cast<uint16_t>(sign | ((magnitude - 0x38000000 + 0xfff + odd) >> 13));
  }
  // Subnormal in half, in units of 2^-24. Below 2^-25 everything rounds to zero, and
  // 2^-25 itself is a tie that goes to the even zero.
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return sign;
  const uint32_t significand = (magnitude & 0x7fffff) | 0x800000;
  const uint32_t shift = 126 - exponent;
  uint32_t result = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (result & 1) != 0)) ++result;
  return static_cast<uint16_t>(sign | result);
}

float bfloat16_to_float(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  if (is_float_nan(wide)) wide |= kFloatQuietBit;
  return std::bit_cast<float>(wide);
}

uint16_t float_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (is_float_nan(bits)) {
    // As for half: the quiet bit keeps a low-bits-only payload from turning into inf.
    return static_cast<uint16_t>((bits | kFloatQuietBit) >> 16);
  }
  // Round the low 16 bits to nearest even; past the largest bfloat16 the carry runs into
  // the exponent and gives inf, as IEEE rounding does.
  const uint32_t odd = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7fff + odd) >> 16);
}

}  // namespace tutti
