// tutti/float16.hpp: the 16-bit float element types of TUTTI_DTYPE_FLOAT16 and
// TUTTI_DTYPE_BFLOAT16, as two bytes each, with conversions from and to float.
//
// C++17 has no 16-bit float type, and these are not meant as one: no arithmetic, only
// the bits and the conversions (tutti_float16.h's, which round as tutti's reductions do),
// so that a std::vector<tutti::BFloat16> has its dtype deduced like any other buffer.
// Storage already holding the bits (say uint16_t from another library) needs no copy:
// give it its dtype by hand, tutti::Buffer(data, count, TUTTI_DTYPE_BFLOAT16).
#ifndef TUTTI_CPP_FLOAT16_HPP
#define TUTTI_CPP_FLOAT16_HPP

#include <cstdint>

#include "tutti_float16.h"

namespace tutti {

// IEEE 754 binary16: 1 sign bit, 5 exponent bits, 10 mantissa bits.
struct Float16 {
  uint16_t bits;

  static Float16 from_float(float value) { return Float16{tutti_float16_from_double(value)}; }
  // Exact: every float16 is a float.
  float to_float() const { return static_cast<float>(tutti_float16_to_double(bits)); }
};

// bfloat16: the upper half of a float32 (8 exponent bits, 7 mantissa bits).
struct BFloat16 {
  uint16_t bits;

  static BFloat16 from_float(float value) { return BFloat16{tutti_bfloat16_from_double(value)}; }
  float to_float() const { return static_cast<float>(tutti_bfloat16_to_double(bits)); }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2, "16-bit floats must be two bytes, unpadded");

}  // namespace tutti

#endif  // TUTTI_CPP_FLOAT16_HPP
