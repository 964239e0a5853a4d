/* Values the collective test programs put in their buffers and the results they expect,
 * computed by every rank for every other rank without communicating.
 *
 * Rank r's element i in case c is a hash of (c, r, i), shaped per dtype and op so that
 * every expected result is exact or has a known bound:
 *   - integers take any value of their type (odd ones for PROD, so products do not
 *     collapse to 0); SUM, PROD and AVG wrap as two's complement in the type, as
 *     tutti.h's kernels do, and AVG truncates the wrapped sum toward zero;
 *   - float16 and bfloat16 take k/2 for k in [-16, 16], float32 and float64 k/64 for k
 *     in [-1000, 1000], float8_e4m3 integers in [-2, 2] and float8_e5m2 in [-1, 1]
 *     (their integers are exact up to 16 and 8): sums of up to 8 ranks, and every
 *     partial sum on the way, are exact in every order; PROD takes +-1/2, +-1, +-2,
 *     whose products are exact powers of two (down to 2^-8, an e4m3 subnormal);
 *   - the only rounding left is AVG's division (and whatever an algorithm adds), which
 *     the tolerance covers: 4 * ranks * epsilon * (sum of |inputs|, / ranks for AVG).
 *     fp8 has no tolerance: its AVG is the exact quotient rounded once to nearest even
 *     by cv_fp8_bits below, the test's own conversion (the library divides the exact
 *     float32 sum, and float32's 24 bits round a quotient to 4 or 3 bits as directly),
 *     and everything else is exact.
 * Header-only so that each program stays one .c file; everything is static inline. */
#ifndef TUTTI_TESTS_COLL_VALUES_H
#define TUTTI_TESTS_COLL_VALUES_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tutti.h"

typedef struct cv_value {
  int64_t i; /* integer dtypes: the value, sign- or zero-extended */
  double f;  /* float dtypes */
} cv_value;

static inline uint64_t cv_hash(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^
               (c + 0x85EBCA77C2B2AE63ull) * 0x94D049BB133111EBull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

/* A number in [0, n) from the hash: one multiply where % would divide (the checks of
 * the big counts draw millions of these a case). */
static inline int cv_below(uint64_t h, uint64_t n) { return (int)(((unsigned __int128)h * n) >> 64); }

static inline size_t cv_size(tutti_dtype dtype) {
  switch (dtype) {
    case TUTTI_DTYPE_INT8:
    case TUTTI_DTYPE_UINT8:
    case TUTTI_DTYPE_FLOAT8_E4M3:
    case TUTTI_DTYPE_FLOAT8_E5M2: return 1;
    case TUTTI_DTYPE_FLOAT16:
    case TUTTI_DTYPE_BFLOAT16: return 2;
    case TUTTI_DTYPE_INT32:
    case TUTTI_DTYPE_FLOAT32: return 4;
    case TUTTI_DTYPE_INT64:
    case TUTTI_DTYPE_FLOAT64: return 8;
  }
  return 0;
}

static inline int cv_is_float(tutti_dtype dtype) { return dtype >= TUTTI_DTYPE_FLOAT16; }
static inline int cv_is_fp8(tutti_dtype dtype) {
  return dtype == TUTTI_DTYPE_FLOAT8_E4M3 || dtype == TUTTI_DTYPE_FLOAT8_E5M2;
}

#define CV_DTYPES 10
#define CV_OPS 5
static const char* const cv_dtype_names[CV_DTYPES] = {"int8",     "uint8",   "int32",   "int64",       "float16",
                                                      "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2"};
static const char* const cv_op_names[CV_OPS] = {"sum", "prod", "min", "max", "avg"};

/* X(dtype, op) for every dtype and op: a caller that dispatches through it calls its
 * loop with both as constants, and (flattened) the per-element switches below fold
 * away. */
#define CV_EACH_OP_OF(X, dtype) \
  X(dtype, TUTTI_OP_SUM) X(dtype, TUTTI_OP_PROD) X(dtype, TUTTI_OP_MIN) X(dtype, TUTTI_OP_MAX) X(dtype, TUTTI_OP_AVG)
#define CV_EACH_DTYPE_AND_OP(X)             \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_INT8)        \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_UINT8)       \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_INT32)       \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_INT64)       \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_FLOAT16)     \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_BFLOAT16)    \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_FLOAT32)     \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_FLOAT64)     \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_FLOAT8_E4M3) \
  CV_EACH_OP_OF(X, TUTTI_DTYPE_FLOAT8_E5M2)

static inline const char* cv_dtype_name(tutti_dtype dtype) {
  return (int)dtype >= 0 && (int)dtype < CV_DTYPES ? cv_dtype_names[dtype] : "unknown";
}
static inline const char* cv_op_name(tutti_op op) {
  return (int)op >= 0 && (int)op < CV_OPS ? cv_op_names[op] : "unknown";
}

/* Joins the job from the launcher's environment and reads this rank's place; on
 * failure prints a FAIL line and returns 0. */
static inline int cv_join_world(tutti_comm** comm, int* rank, int* size) {
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  tutti_status status = tutti_comm_init(&config, comm);
  if (status != TUTTI_OK) {
    printf("FAIL rank ? init: %s: %s\n", tutti_status_name(status), tutti_last_error());
    return 0;
  }
  int32_t r32, s32;
  tutti_comm_rank(*comm, &r32);
  tutti_comm_size(*comm, &s32);
  *rank = r32;
  *size = s32;
  return 1;
}

/* Looks a name up in names[0..n); -1 when absent. */
static inline int cv_lookup(const char* const* names, int n, const char* name) {
  for (int i = 0; i < n; ++i) {
    if (strcmp(names[i], name) == 0) return i;
  }
  return -1;
}

/* raw cut to the dtype's width and extended back to 64 bits: two's complement wrap. */
static inline int64_t cv_wrap(tutti_dtype dtype, uint64_t raw) {
  switch (dtype) {
    case TUTTI_DTYPE_INT8: return (int8_t)(uint8_t)raw;
    case TUTTI_DTYPE_UINT8: return (uint8_t)raw;
    case TUTTI_DTYPE_INT32: return (int32_t)(uint32_t)raw;
    default: return (int64_t)raw;
  }
}

/* 2^k as a double, for k in the normal range. */
static inline double cv_pow2(int k) {
  uint64_t bits = (uint64_t)(k + 1023) << 52;
  double value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

/* value rounded to `bits` significant bits, to nearest even (value normal or 0). */
static inline double cv_round_to_bits(double value, int bits) {
  if (value == 0) return value;
  uint64_t raw;
  memcpy(&raw, &value, sizeof raw);
  /* Already that short (every input these tests make): nothing to round. */
  if ((raw & ((1ull << (53 - bits)) - 1)) == 0) return value;
  int exponent = (int)((raw >> 52) & 0x7ff) - 1023;
  double ulp = cv_pow2(exponent - (bits - 1));
  /* Times 1/ulp, a power of two too: exact, and a multiply where a division is slow. */
  double scaled = value * cv_pow2((bits - 1) - exponent), magnitude = scaled < 0 ? -scaled : scaled;
  volatile double shifted = magnitude + 4503599627370496.0; /* 2^52: rounds to an integer, ties to even */
  double rounded = shifted - 4503599627370496.0;
  return (scaled < 0 ? -rounded : rounded) * ulp;
}

static inline uint16_t cv_half_bits(double value) {
  value = cv_round_to_bits(value, 11);
  if (value == 0) return 0;
  uint64_t raw;
  memcpy(&raw, &value, sizeof raw);
  uint16_t sign = (uint16_t)((raw >> 48) & 0x8000);
  int exponent = (int)((raw >> 52) & 0x7ff) - 1023;
  if (exponent > 15) return (uint16_t)(sign | 0x7c00);
  if (exponent < -14) return sign; /* not produced by these tests */
  return (uint16_t)(sign | (uint16_t)((exponent + 15) << 10) | (uint16_t)((raw >> 42) & 0x3ff));
}

static inline double cv_half_value(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  double magnitude;
  if (exponent == 0) {
    magnitude = (bits & 0x3ff) * cv_pow2(-24);
  } else if (exponent == 31) {
    magnitude = (bits & 0x3ff) ? 0.0 / 0.0 : 1.0 / 0.0;
  } else {
    magnitude = (1024 + (bits & 0x3ff)) * cv_pow2(exponent - 25);
  }
  return (bits & 0x8000) ? -magnitude : magnitude;
}

static inline uint16_t cv_bfloat16_bits(double value) {
  float rounded = (float)cv_round_to_bits(value, 8);
  uint32_t raw;
  memcpy(&raw, &rounded, sizeof raw);
  return (uint16_t)(raw >> 16);
}

static inline double cv_bfloat16_value(uint16_t bits) {
  uint32_t raw = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &raw, sizeof value);
  return value;
}

/* fp8 of a value that is 0 or normal in the format (these tests make no others): e4m3
 * has 3 mantissa bits and bias 7, e5m2 2 and 15. */
static inline uint8_t cv_fp8_bits(tutti_dtype dtype, double value) {
  const int mantissa_bits = dtype == TUTTI_DTYPE_FLOAT8_E4M3 ? 3 : 2;
  const int bias = dtype == TUTTI_DTYPE_FLOAT8_E4M3 ? 7 : 15;
  value = cv_round_to_bits(value, mantissa_bits + 1);
  if (value == 0) return 0;
  uint64_t raw;
  memcpy(&raw, &value, sizeof raw);
  uint8_t sign = (uint8_t)((raw >> 56) & 0x80);
  int exponent = (int)((raw >> 52) & 0x7ff) - 1023;
  uint8_t mantissa = (uint8_t)((raw >> (52 - mantissa_bits)) & ((1u << mantissa_bits) - 1));
  return (uint8_t)(sign | (uint8_t)((exponent + bias) << mantissa_bits) | mantissa);
}

/* What an fp8 code means, subnormals, e5m2's infinities and both formats' NaNs included. */
static inline double cv_fp8_value(tutti_dtype dtype, uint8_t bits) {
  const int e4m3 = dtype == TUTTI_DTYPE_FLOAT8_E4M3;
  const int mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, top = e4m3 ? 15 : 31;
  int exponent = (bits & 0x7f) >> mantissa_bits;
  int mantissa = bits & ((1 << mantissa_bits) - 1);
  double magnitude;
  if (e4m3 ? (bits & 0x7f) == 0x7f : exponent == top) {
    magnitude = e4m3 || mantissa != 0 ? 0.0 / 0.0 : 1.0 / 0.0;
  } else if (exponent == 0) {
    magnitude = mantissa * cv_pow2(1 - bias - mantissa_bits);
  } else {
    magnitude = ((1 << mantissa_bits) + mantissa) * cv_pow2(exponent - bias - mantissa_bits);
  }
  return (bits & 0x80) ? -magnitude : magnitude;
}

/* Rank `rank`'s element `index` in case `case_id`. */
static inline cv_value cv_input(tutti_dtype dtype, tutti_op op, uint64_t case_id, int rank, uint64_t index) {
  uint64_t h = cv_hash(case_id, (uint64_t)rank, index);
  cv_value v = {0, 0.0};
  if (!cv_is_float(dtype)) {
    v.i = cv_wrap(dtype, op == TUTTI_OP_PROD ? (h | 1) : h);
  } else if (op == TUTTI_OP_PROD) {
    static const double factors[] = {-2.0, -1.0, -0.5, 0.5, 1.0, 2.0};
    v.f = factors[cv_below(h, 6)];
  } else if (dtype == TUTTI_DTYPE_FLOAT16 || dtype == TUTTI_DTYPE_BFLOAT16) {
    v.f = (cv_below(h, 33) - 16) * 0.5;
  } else if (dtype == TUTTI_DTYPE_FLOAT8_E4M3) {
    v.f = cv_below(h, 5) - 2;
  } else if (dtype == TUTTI_DTYPE_FLOAT8_E5M2) {
    v.f = cv_below(h, 3) - 1;
  } else {
    v.f = (cv_below(h, 2001) - 1000) / 64.0;
  }
  return v;
}

static inline void cv_store(tutti_dtype dtype, void* buffer, size_t index, cv_value v) {
  unsigned char* at = (unsigned char*)buffer + index * cv_size(dtype);
  switch (dtype) {
    case TUTTI_DTYPE_INT8:
    case TUTTI_DTYPE_UINT8: {
      uint8_t x = (uint8_t)v.i;
      memcpy(at, &x, 1);
      break;
    }
    case TUTTI_DTYPE_INT32: {
      int32_t x = (int32_t)v.i;
      memcpy(at, &x, 4);
      break;
    }
    case TUTTI_DTYPE_INT64: memcpy(at, &v.i, 8); break;
    case TUTTI_DTYPE_FLOAT16: {
      uint16_t x = cv_half_bits(v.f);
      memcpy(at, &x, 2);
      break;
    }
    case TUTTI_DTYPE_BFLOAT16: {
      uint16_t x = cv_bfloat16_bits(v.f);
      memcpy(at, &x, 2);
      break;
    }
    case TUTTI_DTYPE_FLOAT32: {
      float x = (float)v.f;
      memcpy(at, &x, 4);
      break;
    }
    case TUTTI_DTYPE_FLOAT64: memcpy(at, &v.f, 8); break;
    case TUTTI_DTYPE_FLOAT8_E4M3:
    case TUTTI_DTYPE_FLOAT8_E5M2: *at = cv_fp8_bits(dtype, v.f); break;
  }
}

static inline cv_value cv_load(tutti_dtype dtype, const void* buffer, size_t index) {
  const unsigned char* at = (const unsigned char*)buffer + index * cv_size(dtype);
  cv_value v = {0, 0.0};
  switch (dtype) {
    case TUTTI_DTYPE_INT8: {
      int8_t x;
      memcpy(&x, at, 1);
      v.i = x;
      break;
    }
    case TUTTI_DTYPE_UINT8: {
      uint8_t x;
      memcpy(&x, at, 1);
      v.i = x;
      break;
    }
    case TUTTI_DTYPE_INT32: {
      int32_t x;
      memcpy(&x, at, 4);
      v.i = x;
      break;
    }
    case TUTTI_DTYPE_INT64: memcpy(&v.i, at, 8); break;
    case TUTTI_DTYPE_FLOAT16: {
      uint16_t x;
      memcpy(&x, at, 2);
      v.f = cv_half_value(x);
      break;
    }
    case TUTTI_DTYPE_BFLOAT16: {
      uint16_t x;
      memcpy(&x, at, 2);
      v.f = cv_bfloat16_value(x);
      break;
    }
    case TUTTI_DTYPE_FLOAT32: {
      float x;
      memcpy(&x, at, 4);
      v.f = x;
      break;
    }
    case TUTTI_DTYPE_FLOAT64: memcpy(&v.f, at, 8); break;
    case TUTTI_DTYPE_FLOAT8_E4M3:
    case TUTTI_DTYPE_FLOAT8_E5M2: v.f = cv_fp8_value(dtype, *at); break;
  }
  return v;
}

/* Element `index` of buffer holds exactly the bytes of v. */
static inline int cv_same_bytes(tutti_dtype dtype, const void* buffer, size_t index, cv_value v) {
  unsigned char expected[8];
  cv_store(dtype, expected, 0, v);
  const unsigned char* at = (const unsigned char*)buffer + index * cv_size(dtype);
  /* Constant sizes, so that the compiler compares in place instead of calling memcmp. */
  switch (cv_size(dtype)) {
    case 1: return at[0] == expected[0];
    case 2: return memcmp(at, expected, 2) == 0;
    case 4: return memcmp(at, expected, 4) == 0;
    default: return memcmp(at, expected, 8) == 0;
  }
}

static inline void cv_format(tutti_dtype dtype, cv_value v, char* out, size_t out_size) {
  if (cv_is_float(dtype)) {
    snprintf(out, out_size, "%.9g", v.f);
  } else {
    snprintf(out, out_size, "%lld", (long long)v.i);
  }
}

/* ---- the reduction of every rank's input, as the library must compute it --------- */

typedef struct cv_accumulator {
  tutti_dtype dtype;
  tutti_op op;
  int n;
  uint64_t sum, product; /* integers: wrapping arithmetic */
  int64_t min, max;
  double fsum, fproduct, fmin, fmax, fabs_sum;
} cv_accumulator;

static inline void cv_acc_init(cv_accumulator* acc, tutti_dtype dtype, tutti_op op) {
  memset(acc, 0, sizeof *acc);
  acc->dtype = dtype;
  acc->op = op;
  acc->product = 1;
  acc->fproduct = 1.0;
}

static inline void cv_acc_add(cv_accumulator* acc, cv_value v) {
  if (acc->n == 0) {
    acc->min = acc->max = v.i;
    acc->fmin = acc->fmax = v.f;
  }
  ++acc->n;
  acc->sum += (uint64_t)v.i;
  acc->product *= (uint64_t)v.i;
  if (v.i < acc->min) acc->min = v.i;
  if (v.i > acc->max) acc->max = v.i;
  acc->fsum += v.f;
  acc->fproduct *= v.f;
  if (v.f < acc->fmin) acc->fmin = v.f;
  if (v.f > acc->fmax) acc->fmax = v.f;
  acc->fabs_sum += v.f < 0 ? -v.f : v.f;
}

static inline double cv_epsilon(tutti_dtype dtype) {
  switch (dtype) {
    case TUTTI_DTYPE_FLOAT16: return cv_pow2(-10);
    case TUTTI_DTYPE_BFLOAT16: return cv_pow2(-7);
    case TUTTI_DTYPE_FLOAT32: return cv_pow2(-23);
    default: return cv_pow2(-52);
  }
}

/* The expected result, and for floats the tolerance around it. */
static inline cv_value cv_acc_result(const cv_accumulator* acc, double* tolerance) {
  cv_value v = {0, 0.0};
  *tolerance = 0.0;
  if (!cv_is_float(acc->dtype)) {
    switch (acc->op) {
      case TUTTI_OP_SUM: v.i = cv_wrap(acc->dtype, acc->sum); break;
      case TUTTI_OP_PROD: v.i = cv_wrap(acc->dtype, acc->product); break;
      case TUTTI_OP_MIN: v.i = acc->min; break;
      case TUTTI_OP_MAX: v.i = acc->max; break;
      case TUTTI_OP_AVG: v.i = cv_wrap(acc->dtype, acc->sum) / acc->n; break;
    }
    return v;
  }
  if (cv_is_fp8(acc->dtype)) {
    /* Exact (the inputs are chosen so), and AVG rounded once by the test's own conversion. */
    switch (acc->op) {
      case TUTTI_OP_SUM: v.f = acc->fsum; break;
      case TUTTI_OP_PROD: v.f = acc->fproduct; break;
      case TUTTI_OP_MIN: v.f = acc->fmin; break;
      case TUTTI_OP_MAX: v.f = acc->fmax; break;
      case TUTTI_OP_AVG: v.f = cv_fp8_value(acc->dtype, cv_fp8_bits(acc->dtype, acc->fsum / acc->n)); break;
    }
    return v;
  }
  double slack = 4.0 * acc->n * cv_epsilon(acc->dtype);
  switch (acc->op) {
    case TUTTI_OP_SUM:
      v.f = acc->fsum;
      *tolerance = slack * acc->fabs_sum;
      break;
    case TUTTI_OP_PROD:
      v.f = acc->fproduct;
      *tolerance = slack * (acc->fproduct < 0 ? -acc->fproduct : acc->fproduct);
      break;
    case TUTTI_OP_MIN: v.f = acc->fmin; break;
    case TUTTI_OP_MAX: v.f = acc->fmax; break;
    case TUTTI_OP_AVG:
      v.f = acc->fsum / acc->n;
      *tolerance = slack * acc->fabs_sum / acc->n;
      break;
  }
  return v;
}

/* got matches expected: exactly for integers, within tolerance for floats. */
static inline int cv_close(tutti_dtype dtype, cv_value got, cv_value expected, double tolerance) {
  if (!cv_is_float(dtype)) return got.i == expected.i;
  double difference = got.f - expected.f;
  if (difference < 0) difference = -difference;
  return difference <= tolerance; /* false for NaN */
}

#endif
