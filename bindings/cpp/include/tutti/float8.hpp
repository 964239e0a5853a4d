// tutti/float8.hpp: the 8-bit float element types of TUTTI_DTYPE_FLOAT8_E4M3 and
// TUTTI_DTYPE_FLOAT8_E5M2, as one byte each, with conversions from and to float.
//
// As tutti/float16.hpp's types: no arithmetic, only the bits and the conversions
// (tutti_float8.h's, which round and saturate as tutti's reductions do), so that a
// std::vector<tutti::Float8E4m3> has its dtype deduced like any other buffer. Bytes
// already holding fp8 (say from torch or CUDA's __nv_fp8_e4m3) need no copy: give them
// their dtype by hand, tutti::Buffer(data, count, TUTTI_DTYPE_FLOAT8_E4M3).
#ifndef TUTTI_CPP_FLOAT8_HPP
#define TUTTI_CPP_FLOAT8_HPP

#include <cstdint>

#include "tutti_float8.h"

namespace tutti {

// OCP E4M3 ("fn": no infinity): 1 sign bit, 4 exponent bits, 3 mantissa bits; at most 448.
struct Float8E4m3 {
  uint8_t bits;

  static Float8E4m3 from_float(float value) { return Float8E4m3{tutti_float8_e4m3_from_double(value)}; }
  // Exact: every fp8 is a float.
  float to_float() const { return static_cast<float>(tutti_float8_e4m3_to_double(bits)); }
};

// OCP E5M2: 1 sign bit, 5 exponent bits, 2 mantissa bits; at most 57344, and infinities.
struct Float8E5m2 {
  uint8_t bits;

  static Float8E5m2 from_float(float value) { return Float8E5m2{tutti_float8_e5m2_from_double(value)}; }
  float to_float() const { return static_cast<float>(tutti_float8_e5m2_to_double(bits)); }
};

static_assert(sizeof(Float8E4m3) == 1 && sizeof(Float8E5m2) == 1, "8-bit floats must be one byte");

}  // namespace tutti

#endif  // TUTTI_CPP_FLOAT8_HPP
