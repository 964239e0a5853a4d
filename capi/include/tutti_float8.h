/* tutti_float8.h: the elements of TUTTI_DTYPE_FLOAT8_E4M3 and TUTTI_DTYPE_FLOAT8_E5M2, to
 * and from double, for programs that fill or read such buffers (C99 or C++; link with -lm).
 *
 * Header-only: nothing here is a symbol of libtutti, so it adds nothing to the ABI.
 * The rounding is the one tutti's reductions use (tutti.h, tutti_dtype): to nearest,
 * ties to even, straight from the double, saturating at the largest finite value
 * (448, 57344), infinity included; NaN stays a quiet NaN. The runtime's tests check
 * every 8-bit value and every rounding boundary against these.
 *
 * E4M3 (4 exponent bits, bias 7, 3 mantissa bits) has no infinity and one NaN per sign,
 * S.1111.111; E5M2 (5 exponent bits, bias 15, 2 mantissa bits) is the upper byte of an
 * IEEE binary16. */
#ifndef TUTTI_FLOAT8_H
#define TUTTI_FLOAT8_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* value as an 8-bit float of mantissa_bits and bias; largest: the largest finite code,
 * nan: the NaN code, both without the sign. */
static inline uint8_t tutti_float8_encode_(int mantissa_bits, int bias, uint8_t largest, uint8_t nan, double value) {
  const uint8_t sign = signbit(value) ? 0x80 : 0;
  const int min_exponent = 1 - bias;
  double magnitude = fabs(value);
  double significand;
  uint32_t code;
  int exponent;
  if (isnan(value)) return (uint8_t)(sign | nan);
  if (magnitude == 0) return sign;
  if (isinf(magnitude)) return (uint8_t)(sign | largest);
  exponent = ilogb(magnitude);
  if (exponent < min_exponent) {
    /* Subnormal: a count of the smallest step, 2^(min_exponent - mantissa_bits). A
     * count that rounds up to 2^mantissa_bits is the smallest normal number, which
     * these same bits spell. nearbyint rounds ties to even in the default mode. */
    return (uint8_t)(sign | (uint8_t)nearbyint(ldexp(magnitude, mantissa_bits - min_exponent)));
  }
  significand = nearbyint(ldexp(magnitude, mantissa_bits - exponent)); /* in [2^m, 2^(m+1)] */
  if (significand == ldexp(1.0, mantissa_bits + 1)) {
    significand /= 2;
    ++exponent;
  }
  if (exponent + bias >= 1 << (7 - mantissa_bits)) return (uint8_t)(sign | largest);
  code = ((uint32_t)(exponent + bias) << mantissa_bits) | ((uint32_t)significand - (UINT32_C(1) << mantissa_bits));
  return (uint8_t)(sign | (code < largest ? code : largest));
}

/* finite_only: E4M3, whose top exponent holds numbers and only S.1111.111 is NaN. */
static inline double tutti_float8_decode_(int mantissa_bits, int bias, int finite_only, uint8_t bits) {
  const uint32_t exponent_mask = (UINT32_C(1) << (7 - mantissa_bits)) - 1;
  const uint32_t exponent = ((uint32_t)bits >> mantissa_bits) & exponent_mask;
  const uint32_t fraction = bits & ((UINT32_C(1) << mantissa_bits) - 1);
  double magnitude;
  if (finite_only ? (bits & 0x7f) == 0x7f : exponent == exponent_mask) {
    magnitude = finite_only || fraction != 0 ? NAN : INFINITY;
  } else if (exponent == 0) {
    magnitude = ldexp((double)fraction, 1 - bias - mantissa_bits);
  } else {
    magnitude = ldexp((double)(fraction + (UINT32_C(1) << mantissa_bits)), (int)exponent - bias - mantissa_bits);
  }
  return bits & 0x80 ? -magnitude : magnitude;
}

static inline uint8_t tutti_float8_e4m3_from_double(double value) {
  return tutti_float8_encode_(3, 7, 0x7e, 0x7f, value);
}
static inline double tutti_float8_e4m3_to_double(uint8_t bits) { return tutti_float8_decode_(3, 7, 1, bits); }

static inline uint8_t tutti_float8_e5m2_from_double(double value) {
  return tutti_float8_encode_(2, 15, 0x7b, 0x7e, value);
}
static inline double tutti_float8_e5m2_to_double(uint8_t bits) { return tutti_float8_decode_(2, 15, 0, bits); }

#ifdef __cplusplus
}
#endif

#endif /* TUTTI_FLOAT8_H */
