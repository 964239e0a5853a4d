// tutti/float16.hpp: the 16-bit float element types of TUTTI_DTYPE_FLOAT16 and
// TUTTI_DTYPE_BFLOAT16, as two bytes each, with conversions from and to float.
//
// C++17 has no 16-bit float type, and these are not meant as one: no arithmetic, only
// the bits and the conversions (round to nearest even, as tutti rounds its reductions),
// so that a std::vector<tutti::BFloat16> has its dtype deduced like any other buffer.
// Storage already holding the bits (say uint16_t from another library) needs no copy:
// give it its dtype by hand, tutti::Buffer(data, count, TUTTI_DTYPE_BFLOAT16).
#ifndef TUTTI_CPP_FLOAT16_HPP
#define TUTTI_CPP_FLOAT16_HPP

#include <cstdint>
#include <cstring>

namespace tutti {
namespace detail {

inline uint32_t bits_of(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  return x;
}

inline float float_of(uint32_t x) {
  float value;
  std::memcpy(&value, &x, sizeof value);
  return value;
}

}  // namespace detail

// IEEE 754 binary16: 1 sign bit, 5 exponent bits, 10 mantissa bits.
struct Float16 {
  uint16_t bits;

  // After Fabian Giesen's float_to_half_fast3_rtne: subnormals through a float addition
  // (which rounds to nearest even), normals by adding the rounding bias to the bits.
  static Float16 from_float(float value) {
    using detail::bits_of, detail::float_of;
    uint32_t x = bits_of(value);
    const uint32_t sign = x & 0x80000000u;
    x ^= sign;
    uint32_t out;
    if (x >= (127u + 16u) << 23) {  // 65536 or more, infinity, NaN
      out = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (x < 113u << 23) {  // below 2^-14: a subnormal or zero
      const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
      out = bits_of(float_of(x) + float_of(magic)) - magic;
    } else {  // a carry out of the mantissa rounds 65520 and up to infinity
      const uint32_t mantissa_odd = (x >> 13) & 1u;
      out = (x + ((15u - 127u) << 23) + 0xfffu + mantissa_odd) >> 13;
    }
    return Float16{static_cast<uint16_t>(out | (sign >> 16))};
  }

  float to_float() const {
    using detail::bits_of, detail::float_of;
    const uint32_t shifted_exponent = 0x7c00u << 13;
    uint32_t x = (bits & 0x7fffu) << 13;
    const uint32_t exponent = x & shifted_exponent;
    x += (127u - 15u) << 23;
    if (exponent == shifted_exponent) {  // infinity or NaN
      x += (128u - 16u) << 23;
    } else if (exponent == 0) {  // zero or a subnormal: renormalise through a float
      x = bits_of(float_of(x + (1u << 23)) - float_of(113u << 23));
    }
    return float_of(x | static_cast<uint32_t>(bits & 0x8000u) << 16);
  }
};

// bfloat16: the upper half of a float32 (8 exponent bits, 7 mantissa bits).
struct BFloat16 {
  uint16_t bits;

  static BFloat16 from_float(float value) {
    const uint32_t x = detail::bits_of(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((x >> 16) | 0x40u)};  // quiet NaN
    return BFloat16{static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
  }

  float to_float() const { return detail::float_of(static_cast<uint32_t>(bits) << 16); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit floats must be two bytes, unpadded");

}  // namespace tutti

#endif  // TUTTI_CPP_FLOAT16_HPP
