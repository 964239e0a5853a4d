// The reduction kernels (reduce_op.h). Every entry point but reduce_many_to is one call
// of `reduce`: a single pass that folds n sources, in order, into dst, instantiated for
// each (dtype, op) pair; reduce_many_to folds a cache line at a time in the same order. Integers and float32/64 run
// through plain loops over restrict-qualified pointers, which GCC vectorizes at -O3 (runtime/CMakeLists.txt compiles
// this file so), for AVX2 too where the CPU has it. 16-bit and 8-bit floats are widened to float32, combined and
// rounded back once: eight at a time with F16C/AVX2 where the CPU has them, else one at a time with half.cc's or
// float8.cc's conversions, which define the results.
#include "runtime/operation/reduce_op.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "runtime/operation/float_bits.h"
#include "runtime/operation/reduce_dispatch.h"
#include "runtime/operation/stream_store.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tutti {

namespace {

struct Sum {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      // Unsigned arithmetic wraps as two's complement does, without signed overflow's UB.
      using Unsigned = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b));
    } else {
      return a + b;
    }
  }
};

struct Prod {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using Unsigned = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<Unsigned>(a) * static_cast<Unsigned>(b));
    } else {
      return a * b;
    }
  }
};

// Float MIN and MAX return NaN when either input is NaN, as NCCL and torch do, so that
// a NaN on one rank cannot vanish in the reduction. On ties the first operand wins,
// which is what decides min(+0, -0). Both are single selects, so they vectorize.
struct Min {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return ((b < a) | std::isnan(b)) ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
};

struct Max {
  template <class T>
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return ((b > a) | std::isnan(b)) ? b : a;
    } else {
      return b > a ? b : a;
    }
  }
};

// ---- dtypes combined as stored ----

// Elements per block of dst: small enough that a block and the stack block beside it
// stay in L1 between the steps of a fold, large enough that per-block calls cost nothing.
constexpr size_t kBlock = 1024;

// restrict tells the compiler that a buffer written through one pointer is reached
// through no other, which is what lets it vectorize without run-time overlap checks.
// dst may be the very buffer of an input, so each way it can be gets its own loop.
// Always inlined, these loops and the kernels that use them (reduce_native,
// reduce_lines_to): each then takes the instruction set of the function it lands in,
// run_baseline's or run_avx2's.
#define TUTTI_INLINE [[gnu::always_inline]] inline

template <class Op, class T>
TUTTI_INLINE void combine(T* __restrict dst, const T* __restrict a, const T* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(a[i], b[i]);
}

template <class Op, class T>
TUTTI_INLINE void combine_into_left(T* __restrict dst, const T* __restrict b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(dst[i], b[i]);
}

template <class Op, class T>
TUTTI_INLINE void combine_into_right(T* __restrict dst, const T* __restrict a, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(a[i], dst[i]);
}

template <class Op, class T>
TUTTI_INLINE void combine_with_itself(T* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(dst[i], dst[i]);
}

template <class Op, class T>
TUTTI_INLINE void combine_maybe_aliased(T* dst, const T* a, const T* b, size_t count) {
  if (dst == a && dst == b) {
    combine_with_itself<Op>(dst, count);
  } else if (dst == a) {
    combine_into_left<Op>(dst, b, count);
  } else if (dst == b) {
    combine_into_right<Op>(dst, a, count);
  } else {
    combine<Op>(dst, a, b, count);
  }
}

template <class T>
TUTTI_INLINE void divide(T* __restrict values, size_t count, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    // Dividing by the int itself, after promotion, keeps a divisor such as 200 exact for
    // int8; C++ division truncates toward zero, as reduce_op.h promises.
    for (size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / divisor);
  } else {
    const auto by = static_cast<T>(divisor);
    for (size_t i = 0; i < count; ++i) values[i] /= by;
  }
}

// Folds block by block: sources 0 .. n-2 into a stack block, which no caller's buffer
// can alias, then that block and the last source into dst. Every source is read before
// dst is written except the last, which combine_maybe_aliased handles, so dst may be any
// source; and an AVG divides the block of dst while it is still in L1. The sources are
// read from their element `first` on (reduce_many_to's blocks), dst from its start.
template <class Op, class T>
TUTTI_INLINE void reduce_native(T* dst, const void* const* sources, int n, size_t first, size_t count, int divisor) {
  T partial[kBlock];
  for (size_t done = 0; done < count; done += kBlock) {
    const size_t len = std::min(kBlock, count - done);
    const auto source = [&](int k) { return static_cast<const T*>(sources[k]) + first + done; };
    T* out = dst + done;
    if (n == 1) {
      if (out != source(0)) std::memcpy(out, source(0), len * sizeof(T));
    } else if (n == 2) {
      combine_maybe_aliased<Op>(out, source(0), source(1), len);
    } else {
      combine<Op>(partial, source(0), source(1), len);
      for (int k = 2; k < n - 1; ++k) combine_into_left<Op>(partial, source(k), len);
      combine_maybe_aliased<Op>(out, partial, source(n - 1), len);
    }
    if (divisor != 0) divide(out, len, divisor);
  }
}

// tutti.h takes void*, so a caller's buffer may sit at any address (floats at an odd
// offset in a byte array). Reading it through a T* is then undefined behaviour in C++
// (UBSan: "load of misaligned address"), and code vectorized on the promise of T's
// alignment may fault. Such a call goes block by block through copies on the stack, in
// the same order as reduce_native, so its results are the same bits; aligned buffers,
// every call in practice, run reduce_native as before.
template <class T>
bool aligned_for(const void* buffer) {
  return reinterpret_cast<uintptr_t>(buffer) % alignof(T) == 0;
}

template <class Op, class T>
void reduce_native_unaligned(void* dst, const void* const* sources, int n, size_t first, size_t count, int divisor) {
  T acc[kBlock];
  T next[kBlock];
  for (size_t done = 0; done < count; done += kBlock) {
    const size_t len = std::min(kBlock, count - done);
    const size_t offset = done * sizeof(T);
    const size_t from = (first + done) * sizeof(T);
    const size_t bytes = len * sizeof(T);
    std::memcpy(acc, static_cast<const unsigned char*>(sources[0]) + from, bytes);
    for (int k = 1; k < n; ++k) {
      std::memcpy(next, static_cast<const unsigned char*>(sources[k]) + from, bytes);
      combine_into_left<Op>(acc, next, len);
    }
    if (divisor != 0) divide(acc, len, divisor);
    std::memcpy(static_cast<unsigned char*>(dst) + offset, acc, bytes);
  }
}

// ---- floats narrower than float32 (16 and 8 bits) ----

// A float format stored as Bits and combined as float32, by its two conversions.
template <class B, float (*kWiden)(B), B (*kNarrow)(float)>
struct NarrowFloat {
  using Bits = B;
  static float widen(B bits) { return kWiden(bits); }
  static B narrow(float value) { return kNarrow(value); }
};

using Float16 = NarrowFloat<uint16_t, half_to_float, float_to_half>;
using Bfloat16 = NarrowFloat<uint16_t, bfloat16_to_float, float_to_bfloat16>;
using Float8E4m3 = NarrowFloat<uint8_t, float8_e4m3_to_float, float_to_float8_e4m3>;
using Float8E5m2 = NarrowFloat<uint8_t, float8_e5m2_to_float, float_to_float8_e5m2>;

template <class T>
constexpr bool kIsNarrowFloat = std::is_same_v<T, Float16> || std::is_same_v<T, Bfloat16> ||
                                std::is_same_v<T, Float8E4m3> || std::is_same_v<T, Float8E5m2>;

// Element i of a buffer of Bits at any address (aligned_for above says why not through
// a Bits*); the compiler makes each a plain load or store.
template <class Bits>
Bits load_bits(const void* buffer, size_t i) {
  Bits bits;
  std::memcpy(&bits, static_cast<const unsigned char*>(buffer) + i * sizeof bits, sizeof bits);
  return bits;
}

template <class Bits>
void store_bits(void* buffer, size_t i, Bits bits) {
  std::memcpy(static_cast<unsigned char*>(buffer) + i * sizeof bits, &bits, sizeof bits);
}

// Elements [begin, count) of dst, from the sources' [first + begin, first + count), one
// at a time: every source is read before dst is written, so dst may be any source.
template <class Op, class Format>
void reduce_narrow_portable(void* dst, const void* const* sources, int n, size_t first, size_t begin, size_t count,
                            int divisor) {
  using Bits = typename Format::Bits;
  for (size_t i = begin; i < count; ++i) {
    float acc = Format::widen(load_bits<Bits>(sources[0], first + i));
    for (int k = 1; k < n; ++k) acc = Op::apply(acc, Format::widen(load_bits<Bits>(sources[k], first + i)));
    if (divisor != 0) acc /= static_cast<float>(divisor);
    store_bits(dst, i, Format::narrow(acc));
  }
}

#if defined(__x86_64__)

#define TUTTI_F16C_AVX2 __attribute__((target("avx2,f16c,fma")))

// Eight float16 <-> eight float32 lanes. F16C rounds to nearest even, keeps subnormals,
// overflows to inf and returns NaNs quiet with the top of the payload, as half.cc does.
struct Float16x8 {
  TUTTI_F16C_AVX2 static __m256 load(const uint16_t* src) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  }
  TUTTI_F16C_AVX2 static void store(__m256 value, uint16_t* dst) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT));
  }
};

// bfloat16 has no conversion instruction before AVX512-BF16, so these are half.cc's
// functions in AVX2 integer operations. load leaves a signalling NaN signalling, unlike
// bfloat16_to_float, which cannot show: store quiets every NaN it writes.
struct Bfloat16x8 {
  TUTTI_F16C_AVX2 static __m256 load(const uint16_t* src) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  TUTTI_F16C_AVX2 static void store(__m256 value, uint16_t* dst) {
    const __m256i bits = _mm256_castps_si256(value);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
    const __m256i quieted = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(value, value, _CMP_UNORD_Q));
    const __m256i wide = _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quieted, nan), 16);
    // packus works within each 128-bit lane; the permute gathers both lanes' four results.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(wide, wide), 0xd8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(packed));
  }
};

// Eight 8-bit floats <-> eight float32 lanes, exactly as float8.cc converts one, for the
// format Layout (float_bits.h). e5m2 is the upper byte of a binary16, so F16C widens it;
// e4m3 is widened by its fields (normal: rebiased; subnormal: mantissa x 2^-9; NaN:
// quiet, signed). Rounding back follows float8.cc in AVX2 integer operations: to
// nearest even, saturating at Layout::kLargest (infinity included), NaN to 0x7f (e5m2: quiet,
// with the top of the payload).
template <class Layout>
struct Float8x8 {
  TUTTI_F16C_AVX2 static __m256 load(const uint8_t* src) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src));
    if constexpr (Layout::kHasInfinities) {
      return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(bytes), 8));
    } else {
      const __m256i bits = _mm256_cvtepu8_epi32(bytes);
      const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x80)), 24);
      const __m256i low = _mm256_and_si256(bits, _mm256_set1_epi32(0x7f));
      const __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(low, 20), _mm256_set1_epi32(120 << 23));
      const __m256 subnormal =
          _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(bits, _mm256_set1_epi32(7))), _mm256_set1_ps(0x1p-9f));
      const __m256i is_subnormal = _mm256_cmpeq_epi32(_mm256_srli_epi32(low, 3), _mm256_setzero_si256());
      __m256i magnitude = _mm256_blendv_epi8(normal, _mm256_castps_si256(subnormal), is_subnormal);
      magnitude = _mm256_blendv_epi8(magnitude, _mm256_set1_epi32(static_cast<int>(kFloatInf | kFloatQuietBit)),
                                     _mm256_cmpeq_epi32(low, _mm256_set1_epi32(0x7f)));
      return _mm256_castsi256_ps(_mm256_or_si256(magnitude, sign));
    }
  }
  TUTTI_F16C_AVX2 static void store(__m256 value, uint8_t* dst) {
    constexpr int kDropped = 23 - Layout::kMantissa;
    const __m256i bits = _mm256_castps_si256(value);
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(~kFloatSignBit)));
    // Normal in fp8: rebias, round the dropped bits to nearest even, saturate.
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(magnitude, kDropped), _mm256_set1_epi32(1));
    const __m256i biased = _mm256_add_epi32(
        _mm256_sub_epi32(magnitude,
                         _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(127 - Layout::kBias) << 23))),
        _mm256_add_epi32(_mm256_set1_epi32((1 << (kDropped - 1)) - 1), odd));
    const __m256i normal =
        _mm256_min_epu32(_mm256_srli_epi32(biased, kDropped), _mm256_set1_epi32(static_cast<int>(Layout::kLargest)));
    // Subnormal in fp8: the significand shifted down, rounded to nearest even; a shift
    // past 24 leaves nothing and rounds to zero, which 25 does as well.
    const __m256i exponent = _mm256_srli_epi32(magnitude, 23);
    const __m256i shift = _mm256_min_epi32(
        _mm256_sub_epi32(_mm256_set1_epi32(151 - Layout::kBias - Layout::kMantissa), exponent), _mm256_set1_epi32(25));
    const __m256i significand =
        _mm256_or_si256(_mm256_and_si256(magnitude, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(0x800000));
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i kept = _mm256_srlv_epi32(significand, shift);
    const __m256i rest = _mm256_and_si256(significand, _mm256_sub_epi32(_mm256_sllv_epi32(one, shift), one));
    const __m256i halfway = _mm256_sllv_epi32(one, _mm256_sub_epi32(shift, one));
    const __m256i up = _mm256_or_si256(
        _mm256_cmpgt_epi32(rest, halfway),
        _mm256_and_si256(_mm256_cmpeq_epi32(rest, halfway), _mm256_cmpeq_epi32(_mm256_and_si256(kept, one), one)));
    const __m256i subnormal = _mm256_sub_epi32(kept, up);  // up is -1 where it rounds up
    const __m256i is_normal = _mm256_cmpgt_epi32(
        magnitude, _mm256_set1_epi32(static_cast<int>((static_cast<uint32_t>(127 + 1 - Layout::kBias) << 23) - 1)));
    __m256i code = _mm256_blendv_epi8(subnormal, normal, is_normal);
    __m256i nan = _mm256_set1_epi32(0x7f);
    if constexpr (Layout::kHasInfinities) {
      nan = _mm256_or_si256(_mm256_set1_epi32(0x7e), _mm256_and_si256(_mm256_srli_epi32(magnitude, 21), one));
    }
    code = _mm256_blendv_epi8(code, nan, _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(static_cast<int>(kFloatInf))));
    code = _mm256_or_si256(code, sign);
    // Eight codes of 0..255 in 32-bit lanes to eight bytes.
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_packus_epi16(words, words));
  }
};

template <class Format>
struct LanesOf;
template <>
struct LanesOf<Float16> {
  using Type = Float16x8;
};
template <>
struct LanesOf<Bfloat16> {
  using Type = Bfloat16x8;
};
template <>
struct LanesOf<Float8E4m3> {
  using Type = Float8x8<Float8E4m3Layout>;
};
template <>
struct LanesOf<Float8E5m2> {
  using Type = Float8x8<Float8E5m2Layout>;
};
template <class Format>
using Lanes8 = typename LanesOf<Format>::Type;

// Op on eight float32 lanes, each lane exactly as Op::apply.
template <class Op>
struct Vector;

template <>
struct Vector<Sum> {
  TUTTI_F16C_AVX2 static __m256 apply(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
};

template <>
struct Vector<Prod> {
  TUTTI_F16C_AVX2 static __m256 apply(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
};

template <>
struct Vector<Min> {
  TUTTI_F16C_AVX2 static __m256 apply(__m256 a, __m256 b) {
    const __m256 take_b = _mm256_or_ps(_mm256_cmp_ps(b, a, _CMP_LT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return _mm256_blendv_ps(a, b, take_b);
  }
};

template <>
struct Vector<Max> {
  TUTTI_F16C_AVX2 static __m256 apply(__m256 a, __m256 b) {
    const __m256 take_b = _mm256_or_ps(_mm256_cmp_ps(b, a, _CMP_GT_OQ), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return _mm256_blendv_ps(a, b, take_b);
  }
};

// The whole groups of eight, returning how many elements that was; the caller does the
// rest one at a time, so nothing past the caller's buffers is read. Each group of every
// source is loaded before dst's group is stored, so dst may be any source.
template <class Op, class Format>
TUTTI_F16C_AVX2 size_t reduce_narrow_avx2(void* destination, const void* const* sources, int n, size_t first,
                                          size_t count, int divisor) {
  using Lanes = Lanes8<Format>;
  using Bits = typename Format::Bits;
  auto* dst = static_cast<Bits*>(destination);
  const __m256 by = _mm256_set1_ps(static_cast<float>(divisor));
  const size_t whole = count - count % 8;
  const auto source = [&](int k) { return static_cast<const Bits*>(sources[k]) + first; };
  for (size_t i = 0; i < whole; i += 8) {
    __m256 acc = Lanes::load(source(0) + i);
    for (int k = 1; k < n; ++k) acc = Vector<Op>::apply(acc, Lanes::load(source(k) + i));
    if (divisor != 0) acc = _mm256_div_ps(acc, by);
    Lanes::store(acc, dst + i);
  }
  return whole;
}

#undef TUTTI_F16C_AVX2

bool cpu_has_f16c_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

#else

bool cpu_has_f16c_avx2() { return false; }

#endif

// Read once per call, so use_kernels costs the kernels nothing measurable.
std::atomic<bool>& avx2_kernels_on() {
  static std::atomic<bool> vector{cpu_has_f16c_avx2()};
  return vector;
}

// Runs kernel(args...) compiled for AVX2 where avx2_kernels_on() says so, and for
// x86-64's baseline (SSE2) otherwise. kernel is always inlined (TUTTI_INLINE), so each
// wrapper compiles its loops for its own instruction set: 32 bytes at a time where the
// baseline takes 16, with the integer min and max that SSE2 lacks. Each element goes
// through the same Op::apply in the same order, so the results are the same bits.
// A 2-rank 512-byte all_reduce between emulated nodes (callgrind): the fold of 128
// floats took 360 instructions through the baseline loops, 267 through AVX2's.
template <auto kernel, class... Args>
[[gnu::noinline]] void run_baseline(Args... args) {
  kernel(args...);
}

#if defined(__x86_64__)
template <auto kernel, class... Args>
__attribute__((target("avx2"))) void run_avx2(Args... args) {
  kernel(args...);
}
#endif

template <auto kernel, class... Args>
void run_fastest(Args... args) {
#if defined(__x86_64__)
  if (avx2_kernels_on().load(std::memory_order_relaxed)) return run_avx2<kernel>(args...);
#endif
  run_baseline<kernel>(args...);
}

template <class Op, class Format>
void reduce_narrow(void* dst, const void* const* sources, int n, size_t first, size_t count, int divisor) {
  size_t done = 0;
#if defined(__x86_64__)
  if (avx2_kernels_on().load(std::memory_order_relaxed)) {
    done = reduce_narrow_avx2<Op, Format>(dst, sources, n, first, count, divisor);
  }
#endif
  reduce_narrow_portable<Op, Format>(dst, sources, n, first, done, count, divisor);
}

// ---- a few elements ----

// Up to this many elements, two sources are combined element by element.
constexpr size_t kFewElements = 32;

// A small message's step (an 8-byte all_reduce adds 2 floats): the block loop's stack
// block and the vector loops' set-up cost a 2-element float32 sum 181 instructions
// (callgrind), where this takes 81 with its dispatch. The block path catches up past
// 32 elements: a 2-rank reduce's root (callgrind, two runs each) took 110-140 fewer
// instructions a call this way at 16 floats, 50-130 at 32. Through memcpy, which
// makes any address right and compiles to plain loads and stores; each element's
// inputs are read before its result is written, so dst may be either source, and the
// results are the same bits as reduce_native's (the same Op::apply, in the same order).
template <class Op, class T>
void combine_few(void* dst, const void* a, const void* b, size_t first, size_t count) {
  const auto* x = static_cast<const unsigned char*>(a) + first * sizeof(T);
  const auto* y = static_cast<const unsigned char*>(b) + first * sizeof(T);
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < count; ++i) {
    T u, v;
    std::memcpy(&u, x + i * sizeof(T), sizeof(T));
    std::memcpy(&v, y + i * sizeof(T), sizeof(T));
    const T result = Op::apply(u, v);
    std::memcpy(out + i * sizeof(T), &result, sizeof(T));
  }
}

// ---- dispatch ----

// Calls fn with the element type of dtype and then with the Op of op, as tag objects,
// so that every pair becomes one template instance. Values outside the enums, which
// capi/ rejects before they get here, do nothing.
template <class Fn>
void with_element(Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::kInt8: return fn(std::type_identity<int8_t>{});
    case Dtype::kUint8: return fn(std::type_identity<uint8_t>{});
    case Dtype::kInt32: return fn(std::type_identity<int32_t>{});
    case Dtype::kInt64: return fn(std::type_identity<int64_t>{});
    case Dtype::kFloat16: return fn(std::type_identity<Float16>{});
    case Dtype::kBfloat16: return fn(std::type_identity<Bfloat16>{});
    case Dtype::kFloat32: return fn(std::type_identity<float>{});
    case Dtype::kFloat64: return fn(std::type_identity<double>{});
    case Dtype::kFloat8E4m3: return fn(std::type_identity<Float8E4m3>{});
    case Dtype::kFloat8E5m2: return fn(std::type_identity<Float8E5m2>{});
  }
}

template <class Fn>
void with_op(ReduceOp op, Fn&& fn) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return fn(Sum{});
    case ReduceOp::kProd: return fn(Prod{});
    case ReduceOp::kMin: return fn(Min{});
    case ReduceOp::kMax: return fn(Max{});
  }
}

// combine_few for dtype and op; false, doing nothing, for the narrow floats, which
// reduce_narrow widens.
bool reduce_few(void* dst, const void* a, const void* b, size_t first, size_t count, Dtype dtype, ReduceOp op) {
  bool done = false;
  with_element(dtype, [&]<class Element>(std::type_identity<Element>) {
    if constexpr (!kIsNarrowFloat<Element>) {
      with_op(op, [&]<class Op>(Op) { combine_few<Op, Element>(dst, a, b, first, count); });
      done = true;
    }
  });
  return done;
}

// reduce()'s blocks, out of line: their stack blocks (kBlock elements) make a frame that
// a few elements need not set up.
[[gnu::noinline]] void reduce_blocks(void* dst, const void* const* sources, int n, size_t first, size_t count,
                                     Dtype dtype, ReduceOp op, int divisor) {
  with_element(dtype, [&]<class Element>(std::type_identity<Element>) {
    with_op(op, [&]<class Op>(Op) {
      if constexpr (kIsNarrowFloat<Element>) {
        reduce_narrow<Op, Element>(dst, sources, n, first, count, divisor);
      } else if (aligned_for<Element>(dst) &&
                 std::all_of(sources, sources + n, [](const void* source) { return aligned_for<Element>(source); })) {
        run_fastest<&reduce_native<Op, Element>>(static_cast<Element*>(dst), sources, n, first, count, divisor);
      } else {
        reduce_native_unaligned<Op, Element>(dst, sources, n, first, count, divisor);
      }
    });
  });
}

// dst[0 .. count) = sources[0] op ... op sources[n-1] over their elements [first,
// first + count), then / divisor unless divisor is 0.
void reduce(void* dst, const void* const* sources, int n, size_t first, size_t count, Dtype dtype, ReduceOp op,
            int divisor) {
  if (count == 0) return;
  if (n == 2 && count <= kFewElements && divisor == 0 &&
      reduce_few(dst, sources[0], sources[1], first, count, dtype, op)) {
    return;
  }
  reduce_blocks(dst, sources, n, first, count, dtype, op, divisor);
}

// ---- into several targets (reduce_many_to) ----

constexpr size_t kLineBytes = 64;

// The fold of the sources' elements [at, at + len) into line, which no source aliases,
// in reduce_native's order, so that the results are the same bits.
template <class Op, class T>
TUTTI_INLINE void fold_line(T* __restrict line, const void* const* sources, int n, size_t at, size_t len, int divisor) {
  const auto source = [&](int k) { return static_cast<const T*>(sources[k]) + at; };
  if (n == 1) {
    std::memcpy(line, source(0), len * sizeof(T));
  } else {
    combine<Op>(line, source(0), source(1), len);
    for (int k = 2; k < n; ++k) combine_into_left<Op>(line, source(k), len);
  }
  if (divisor != 0) divide(line, len, divisor);
}

// A whole line into a target that starts on a line, streaming.
TUTTI_INLINE void stream_line(void* dst, const void* line) {
#if defined(__x86_64__)
  const auto* in = static_cast<const __m128i*>(line);
  auto* out = static_cast<__m128i*>(dst);
  for (int i = 0; i < 4; ++i) _mm_stream_si128(out + i, _mm_load_si128(in + i));
#else
  std::memcpy(dst, line, kLineBytes);
#endif
}

// Streaming in the common case, float32/64 and integers with every buffer aligned for
// its elements and every target at the same distance from a line boundary: elements up
// to the targets' first line boundary, then whole lines, then the rest.
template <class Op, class T>
TUTTI_INLINE void reduce_lines_to(void* const* targets, int target_count, const void* const* sources, int n,
                                  size_t count, int divisor) {
  constexpr size_t kPerLine = kLineBytes / sizeof(T);
  alignas(kLineBytes) T line[kPerLine];
  const auto target = [&](int t, size_t at) { return static_cast<T*>(targets[t]) + at; };
  const auto fold_part = [&](size_t at, size_t len) {
    fold_line<Op>(line, sources, n, at, len, divisor);
    for (int t = 0; t < target_count; ++t) std::memcpy(target(t, at), line, len * sizeof(T));
  };
  const size_t offset = reinterpret_cast<uintptr_t>(targets[0]) % kLineBytes;
  const size_t head = std::min(count, offset == 0 ? 0 : (kLineBytes - offset) / sizeof(T));
  if (head > 0) fold_part(0, head);
  size_t at = head;
  for (; count - at >= kPerLine; at += kPerLine) {
    fold_line<Op>(line, sources, n, at, kPerLine, divisor);
    for (int t = 0; t < target_count; ++t) stream_line(target(t, at), line);
  }
  if (at < count) fold_part(at, count - at);
}

// Plain stores, and streaming where reduce_lines_to does not apply (16- and 8-bit
// floats, buffers off their elements' alignment, targets at different distances from
// a line): a block at a time into L1 through reduce, then into every target.
void reduce_blocks_to(void* const* targets, int target_count, const void* const* sources, int n, size_t count,
                      Dtype dtype, ReduceOp op, int divisor, Stores stores) {
  const size_t unit = dtype_size(dtype);
  alignas(kLineBytes) unsigned char block[4096];
  for (size_t done = 0; done < count; done += sizeof block / unit) {
    const size_t len = std::min(sizeof block / unit, count - done);
    reduce(block, sources, n, done, len, dtype, op, divisor);
    for (int t = 0; t < target_count; ++t) {
      unsigned char* into = static_cast<unsigned char*>(targets[t]) + done * unit;
      if (stores == Stores::kStreaming) {
        stream_unfenced(into, block, len * unit);
      } else {
        std::memcpy(into, block, len * unit);
      }
    }
  }
}

bool share_line_offset(void* const* targets, int target_count) {
  const auto offset = [&](int t) { return reinterpret_cast<uintptr_t>(targets[t]) % kLineBytes; };
  for (int t = 1; t < target_count; ++t) {
    if (offset(t) != offset(0)) return false;
  }
  return true;
}

}  // namespace

void reduce_inplace(void* dst, const void* src, size_t count, Dtype dtype, ReduceOp op) {
  const void* sources[] = {dst, src};
  reduce(dst, sources, 2, 0, count, dtype, op, 0);
}

void reduce_into(void* dst, const void* a, const void* b, size_t count, Dtype dtype, ReduceOp op) {
  const void* sources[] = {a, b};
  reduce(dst, sources, 2, 0, count, dtype, op, 0);
}

void reduce_many(void* dst, const void* const* sources, int n, size_t count, Dtype dtype, ReduceOp op,
                 int average_over) {
  reduce(dst, sources, n, 0, count, dtype, op, op == ReduceOp::kAvg ? average_over : 0);
}

void reduce_many_to(void* const* targets, int target_count, const void* const* sources, int n, size_t count,
                    Dtype dtype, ReduceOp op, int average_over, Stores stores) {
  if (count == 0 || target_count == 0) return;
  const int divisor = op == ReduceOp::kAvg ? average_over : 0;
  // Plain stores keep the results in the cache, where folding a block and then copying
  // it out was faster than line by line (2 ranks, in-place all_reduce on shared
  // buffers: 1 MiB 25-28 us against 37, 4 MiB 109-114 against 145-148). Streaming,
  // line by line keeps the reads and the writes in flight together (64 MiB: 4.43 ms
  // against 6.09 by blocks; the machine's ceiling, 4.28).
  if (stores == Stores::kPlain) {
    if (target_count == 1) {
      reduce(targets[0], sources, n, 0, count, dtype, op, divisor);
    } else {
      reduce_blocks_to(targets, target_count, sources, n, count, dtype, op, divisor, stores);
    }
    return;
  }
  with_element(dtype, [&]<class Element>(std::type_identity<Element>) {
    with_op(op, [&]<class Op>(Op) {
      const auto aligned = [](const void* buffer) { return aligned_for<Element>(buffer); };
      if constexpr (!kIsNarrowFloat<Element>) {
        if (std::all_of(sources, sources + n, aligned) && std::all_of(targets, targets + target_count, aligned) &&
            share_line_offset(targets, target_count)) {
          run_fastest<&reduce_lines_to<Op, Element>>(targets, target_count, sources, n, count, divisor);
          return;
        }
      }
      reduce_blocks_to(targets, target_count, sources, n, count, dtype, op, divisor, stores);
    });
  });
  fence_streaming();
}

void finish_average(void* dst, size_t count, Dtype dtype, ReduceOp op, int n) {
  if (op != ReduceOp::kAvg) return;
  const void* sources[] = {dst};
  reduce(dst, sources, 1, 0, count, dtype, ReduceOp::kSum, n);
}

bool use_kernels(Kernels kernels) {
  const bool vector = kernels == Kernels::kAvx2;
  if (vector && !cpu_has_f16c_avx2()) return false;
  avx2_kernels_on().store(vector, std::memory_order_relaxed);
  return true;
}

}  // namespace tutti
