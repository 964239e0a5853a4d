/* tutti_float16.h: the elements of TUTTI_DTYPE_FLOAT16 and TUTTI_DTYPE_BFLOAT16, to and
 * from double, for programs that fill or read such buffers (C99 or C++; link with -lm).
 *
 * Header-only: nothing here is a symbol of libtutti, so it adds nothing to the ABI.
 * The rounding is tutti's own: to nearest, ties to even, straight from the double
 * (a float converts exactly to a double, so a float goes through these unchanged;
 * rounding through float first would round twice). Overflow gives infinity, NaN stays
 * a quiet NaN. The runtime's reductions round the same way; its tests check every
 * 16-bit value against these.
 *
 * float16 is IEEE 754 binary16 (5 exponent bits, 10 mantissa bits); bfloat16 is the
 * upper half of a float32 (8 exponent bits, 7 mantissa bits). */
#ifndef TUTTI_FLOAT16_H
#define TUTTI_FLOAT16_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A binary float narrower than double, as IEEE 754 lays it out. */
static inline uint32_t tutti_small_float_encode_(int exponent_bits, int mantissa_bits, double value) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const uint32_t sign = signbit(value) ? UINT32_C(1) << (exponent_bits + mantissa_bits) : 0;
  const uint32_t infinity = sign | (((UINT32_C(1) << exponent_bits) - 1) << mantissa_bits);
  const int min_exponent = 1 - bias;
  double magnitude = fabs(value);
  double significand;
  int exponent;
  if (isnan(value)) return infinity | (UINT32_C(1) << (mantissa_bits - 1));
  if (magnitude == 0) return sign;
  if (isinf(magnitude)) return infinity;
  exponent = ilogb(magnitude);
  if (exponent < min_exponent) {
    /* Subnormal: a count of the smallest step, 2^(min_exponent - mantissa_bits). A
     * count that rounds up to 2^mantissa_bits is the smallest normal number, which
     * these same bits spell. nearbyint rounds ties to even in the default mode. */
    return sign | (uint32_t)nearbyint(ldexp(magnitude, mantissa_bits - min_exponent));
  }
  significand = nearbyint(ldexp(magnitude, mantissa_bits - exponent)); /* in [2^m, 2^(m+1)] */
  if (significand == ldexp(1.0, mantissa_bits + 1)) {
    significand /= 2;
    ++exponent;
  }
  if (exponent > bias) return infinity;
  return sign | ((uint32_t)(exponent + bias) << mantissa_bits) |
         ((uint32_t)significand - (UINT32_C(1) << mantissa_bits));
}

static inline double tutti_small_float_decode_(int exponent_bits, int mantissa_bits, uint32_t bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const uint32_t exponent_mask = (UINT32_C(1) << exponent_bits) - 1;
  const uint32_t exponent = (bits >> mantissa_bits) & exponent_mask;
  const uint32_t fraction = bits & ((UINT32_C(1) << mantissa_bits) - 1);
  double magnitude;
  if (exponent == exponent_mask) {
    magnitude = fraction != 0 ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = ldexp((double)fraction, 1 - bias - mantissa_bits);
  } else {
    magnitude = ldexp((double)(fraction + (UINT32_C(1) << mantissa_bits)), (int)exponent - bias - mantissa_bits);
  }
  return (bits >> (exponent_bits + mantissa_bits)) & 1u ? -magnitude : magnitude;
}

static inline uint16_t tutti_float16_from_double(double value) {
  return (uint16_t)tutti_small_float_encode_(5, 10, value);
}
static inline double tutti_float16_to_double(uint16_t bits) { return tutti_small_float_decode_(5, 10, bits); }

static inline uint16_t tutti_bfloat16_from_double(double value) {
  return (uint16_t)tutti_small_float_encode_(8, 7, value);
}
static inline double tutti_bfloat16_to_double(uint16_t bits) { return tutti_small_float_decode_(8, 7, bits); }

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_FLOAT16_H */
