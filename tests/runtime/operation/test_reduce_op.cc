// The reduction kernels (runtime/operation/reduce_op.cc) against a plain scalar
// reference, for every dtype x op, at lengths that leave vector and block tails, with
// every aliasing reduce_op.h allows; and the 16-bit and 8-bit conversions (half.cc,
// float8.cc) at their edge cases. 16-bit floats are checked with both kernels (portable
// and F16C/AVX2) where the CPU has both.
#include <criterion/criterion.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "runtime/operation/reduce_dispatch.h"
#include "runtime/operation/reduce_op.h"
#include "tutti_float16.h"
#include "tutti_float8.h"

using namespace tutti;

namespace {

// 0 with null pointers, 1, a vector tail, either side of where two sources stop being
// combined element by element (32), and lengths past one and two 1024-element blocks of
// the kernels with odd tails.
constexpr size_t kCounts[] = {0, 1, 7, 8, 9, 31, 32, 33, 1031, 2085, 4099};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg};
// Elements after each dst that a kernel must leave alone.
constexpr size_t kGuard = 16;
constexpr unsigned char kGuardByte = 0xa5;

// The test's view of a dtype: how an element is stored, and how the reference widens
// it to combine and narrows it back.
template <class T, Dtype kDtype>
struct Plain {
  using Stored = T;
  using Wide = T;
  static constexpr Dtype dtype = kDtype;
  static Wide widen(T v) { return v; }
  static T narrow(Wide v) { return v; }
};

// A float narrower than float32, stored as its bits and widened to float32.
template <class Bits, Dtype kDtype, float (*kWiden)(Bits), Bits (*kNarrow)(float)>
struct Narrow {
  using Stored = Bits;
  using Wide = float;
  static constexpr Dtype dtype = kDtype;
  static float widen(Bits v) { return kWiden(v); }
  static Bits narrow(float v) { return kNarrow(v); }
};

using Float16 = Narrow<uint16_t, Dtype::kFloat16, half_to_float, float_to_half>;
using Bfloat16 = Narrow<uint16_t, Dtype::kBfloat16, bfloat16_to_float, float_to_bfloat16>;
using Float8E4m3 = Narrow<uint8_t, Dtype::kFloat8E4m3, float8_e4m3_to_float, float_to_float8_e4m3>;
using Float8E5m2 = Narrow<uint8_t, Dtype::kFloat8E5m2, float8_e5m2_to_float, float_to_float8_e5m2>;

template <class Fn>
void for_each_type(Fn&& fn) {
  fn(Plain<int8_t, Dtype::kInt8>{});
  fn(Plain<uint8_t, Dtype::kUint8>{});
  fn(Plain<int32_t, Dtype::kInt32>{});
  fn(Plain<int64_t, Dtype::kInt64>{});
  fn(Float16{});
  fn(Bfloat16{});
  fn(Plain<float, Dtype::kFloat32>{});
  fn(Plain<double, Dtype::kFloat64>{});
  fn(Float8E4m3{});
  fn(Float8E5m2{});
}

// Runs fn once with each set of kernels this CPU has (reduce_dispatch.h), and leaves
// the fastest selected.
template <class Fn>
void on_each_path(Fn&& fn) {
  cr_assert(use_kernels(Kernels::kPortable));
  fn("portable");
  if (use_kernels(Kernels::kAvx2)) fn("avx2");
}

bool is_half_nan(uint16_t bits) { return (bits & 0x7fff) > 0x7c00; }
bool is_bfloat16_nan(uint16_t bits) { return (bits & 0x7fff) > 0x7f80; }
bool is_e4m3_nan(uint8_t bits) { return (bits & 0x7f) == 0x7f; }
bool is_e5m2_nan(uint8_t bits) { return (bits & 0x7f) > 0x7c; }

// Integers compare exactly; floats bitwise, except that any NaN matches any NaN, since
// the reference does not pin which input's payload a NaN result carries.
template <class Type>
bool same(typename Type::Stored x, typename Type::Stored y) {
  using Stored = typename Type::Stored;
  if constexpr (std::is_same_v<Type, Float16>) {
    return x == y || (is_half_nan(x) && is_half_nan(y));
  } else if constexpr (std::is_same_v<Type, Bfloat16>) {
    return x == y || (is_bfloat16_nan(x) && is_bfloat16_nan(y));
  } else if constexpr (std::is_same_v<Type, Float8E4m3>) {
    return x == y || (is_e4m3_nan(x) && is_e4m3_nan(y));
  } else if constexpr (std::is_same_v<Type, Float8E5m2>) {
    return x == y || (is_e5m2_nan(x) && is_e5m2_nan(y));
  } else if constexpr (std::is_floating_point_v<Stored>) {
    return std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y));
  } else {
    return x == y;
  }
}

// What reduce_op.h specifies, written out one element at a time: integers wrap (done
// here in 64-bit unsigned arithmetic, whose low bits are the wrapped result), and float
// MIN/MAX return NaN when either side is NaN and otherwise the first operand on ties.
template <class T>
T reference_apply(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    const auto ua = static_cast<uint64_t>(a);
    const auto ub = static_cast<uint64_t>(b);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return static_cast<T>(ua + ub);
      case ReduceOp::kProd: return static_cast<T>(ua * ub);
      case ReduceOp::kMin: return b < a ? b : a;
      case ReduceOp::kMax: return b > a ? b : a;
    }
  } else {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return a + b;
      case ReduceOp::kProd: return a * b;
      case ReduceOp::kMin:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return b < a ? b : a;
      case ReduceOp::kMax:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return b > a ? b : a;
    }
  }
  return a;
}

template <class T>
T reference_divide(T sum, int n) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int64_t>(sum) / n);
  } else {
    return sum / static_cast<T>(n);
  }
}

// Random elements that reach every case: full-range integers (so sums and products
// wrap), 16-bit and 8-bit floats from all bit patterns (NaN, inf, subnormals, -0
// included), and
// float32/64 of mixed magnitude with a sprinkling of NaN, inf, -0 and subnormals.
template <class Type>
std::vector<typename Type::Stored> random_values(size_t count, std::mt19937_64& rng) {
  using Stored = typename Type::Stored;
  std::vector<Stored> values(count);
  for (auto& v : values) {
    if constexpr (std::is_integral_v<Stored>) {
      v = static_cast<Stored>(rng());
    } else {
      const Stored specials[] = {std::numeric_limits<Stored>::quiet_NaN(),
                                 std::numeric_limits<Stored>::infinity(),
                                 -std::numeric_limits<Stored>::infinity(),
                                 Stored(-0.0),
                                 Stored(0.0),
                                 std::numeric_limits<Stored>::denorm_min() * 3};
      if (rng() % 32 == 0) {
        v = specials[rng() % std::size(specials)];
      } else {
        const double mantissa = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
        v = static_cast<Stored>(std::ldexp(mantissa, static_cast<int>(rng() % 40) - 20));
      }
    }
  }
  return values;
}

// A dst buffer with guard elements after it, filled with a byte pattern.
template <class Stored>
struct Output {
  explicit Output(size_t n) : count(n), storage(n + kGuard) {
    std::memset(storage.data(), kGuardByte, storage.size() * sizeof(Stored));
  }
  Stored* data() { return count == 0 ? nullptr : storage.data(); }
  void check_guard(const char* what) const {
    const auto* bytes = reinterpret_cast<const unsigned char*>(storage.data() + count);
    for (size_t i = 0; i < kGuard * sizeof(Stored); ++i) {
      cr_assert_eq(bytes[i], kGuardByte, "%s wrote past the end of dst", what);
    }
  }
  size_t count;
  std::vector<Stored> storage;
};

// count == 0 passes null pointers, which the kernels must not touch.
template <class Vector>
auto data_or_null(Vector& v) {
  return v.empty() ? nullptr : v.data();
}

template <class Type>
void expect_equal(const typename Type::Stored* got, const std::vector<typename Type::Stored>& want, const char* what,
                  ReduceOp op, const char* path) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (!same<Type>(got[i], want[i])) {
      cr_assert_fail("%s %s %s (%s path), count %zu: element %zu differs from the reference", what,
                     dtype_name(Type::dtype), reduce_op_name(op), path, want.size(), i);
    }
  }
}

// reference for reduce_many: fold the sources in order in the wide type, divide for
// AVG, round once.
template <class Type>
std::vector<typename Type::Stored> reference_many(const std::vector<std::vector<typename Type::Stored>>& sources,
                                                  size_t count, ReduceOp op, int average_over) {
  std::vector<typename Type::Stored> out(count);
  for (size_t i = 0; i < count; ++i) {
    typename Type::Wide acc = Type::widen(sources[0][i]);
    for (size_t k = 1; k < sources.size(); ++k) acc = reference_apply(op, acc, Type::widen(sources[k][i]));
    if (op == ReduceOp::kAvg) acc = reference_divide(acc, average_over);
    out[i] = Type::narrow(acc);
  }
  return out;
}

template <class Type>
std::vector<typename Type::Stored> reference_pair(const std::vector<typename Type::Stored>& a,
                                                  const std::vector<typename Type::Stored>& b, ReduceOp op) {
  std::vector<typename Type::Stored> out(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out[i] = Type::narrow(reference_apply(op, Type::widen(a[i]), Type::widen(b[i])));
  return out;
}

}  // namespace

Test(reduce_op, reduce_into_matches_the_reference_for_every_dtype_and_op, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      using Stored = typename Type::Stored;
      std::mt19937_64 rng(1);
      for (size_t count : kCounts) {
        const auto a = random_values<Type>(count, rng);
        const auto b = random_values<Type>(count, rng);
        for (ReduceOp op : kOps) {
          Output<Stored> dst(count);
          reduce_into(dst.data(), data_or_null(a), data_or_null(b), count, Type::dtype, op);
          expect_equal<Type>(dst.data(), reference_pair<Type>(a, b, op), "reduce_into", op, path);
          dst.check_guard("reduce_into");
        }
      }
    });
  });
}

Test(reduce_op, reduce_into_allows_dst_to_be_either_input, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      std::mt19937_64 rng(2);
      for (size_t count : kCounts) {
        if (count == 0) continue;
        const auto a = random_values<Type>(count, rng);
        const auto b = random_values<Type>(count, rng);
        for (ReduceOp op : kOps) {
          auto dst_is_a = a;
          reduce_into(dst_is_a.data(), dst_is_a.data(), b.data(), count, Type::dtype, op);
          expect_equal<Type>(dst_is_a.data(), reference_pair<Type>(a, b, op), "reduce_into(dst == a)", op, path);

          auto dst_is_b = b;
          reduce_into(dst_is_b.data(), a.data(), dst_is_b.data(), count, Type::dtype, op);
          expect_equal<Type>(dst_is_b.data(), reference_pair<Type>(a, b, op), "reduce_into(dst == b)", op, path);

          auto all_three = a;
          reduce_into(all_three.data(), all_three.data(), all_three.data(), count, Type::dtype, op);
          expect_equal<Type>(all_three.data(), reference_pair<Type>(a, a, op), "reduce_into(dst == a == b)", op, path);

          Output<typename Type::Stored> dst(count);
          reduce_into(dst.data(), b.data(), b.data(), count, Type::dtype, op);
          expect_equal<Type>(dst.data(), reference_pair<Type>(b, b, op), "reduce_into(a == b)", op, path);
        }
      }
    });
  });
}

Test(reduce_op, reduce_inplace_matches_the_reference_and_allows_dst_to_be_src, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      std::mt19937_64 rng(3);
      for (size_t count : kCounts) {
        const auto a = random_values<Type>(count, rng);
        const auto b = random_values<Type>(count, rng);
        for (ReduceOp op : kOps) {
          Output<typename Type::Stored> dst(count);
          if (count != 0) std::memcpy(dst.data(), a.data(), count * sizeof a[0]);
          reduce_inplace(dst.data(), data_or_null(b), count, Type::dtype, op);
          expect_equal<Type>(dst.data(), reference_pair<Type>(a, b, op), "reduce_inplace", op, path);
          dst.check_guard("reduce_inplace");

          auto self = a;
          reduce_inplace(data_or_null(self), data_or_null(self), count, Type::dtype, op);
          expect_equal<Type>(data_or_null(self), reference_pair<Type>(a, a, op), "reduce_inplace(dst == src)", op,
                             path);
        }
      }
    });
  });
}

Test(reduce_op, reduce_many_folds_one_to_eight_sources_and_divides_for_avg, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      using Stored = typename Type::Stored;
      std::mt19937_64 rng(4);
      for (size_t count : kCounts) {
        for (int n = 1; n <= 8; ++n) {
          std::vector<std::vector<Stored>> sources;
          std::vector<const void*> pointers;
          for (int k = 0; k < n; ++k) sources.push_back(random_values<Type>(count, rng));
          for (const auto& s : sources) pointers.push_back(data_or_null(s));
          for (ReduceOp op : kOps) {
            // average_over differs from n on purpose: the caller decides what to divide by.
            const int average_over = n + 2;
            const auto want = reference_many<Type>(sources, count, op, average_over);
            Output<Stored> dst(count);
            reduce_many(dst.data(), pointers.data(), n, count, Type::dtype, op, average_over);
            expect_equal<Type>(dst.data(), want, "reduce_many", op, path);
            dst.check_guard("reduce_many");

            if (count == 0) continue;
            // dst may be any of the sources; a source may also appear twice.
            for (const int alias : {0, n / 2, n - 1}) {
              auto overwritten = sources;
              std::vector<const void*> aliased;
              for (const auto& s : overwritten) aliased.push_back(s.data());
              Stored* into = overwritten[alias].data();
              reduce_many(into, aliased.data(), n, count, Type::dtype, op, average_over);
              expect_equal<Type>(into, want, "reduce_many(dst == a source)", op, path);
            }

            std::vector<std::vector<Stored>> repeated(n, sources[0]);
            std::vector<const void*> same_pointer(n, sources[0].data());
            reduce_many(dst.data(), same_pointer.data(), n, count, Type::dtype, op, average_over);
            expect_equal<Type>(dst.data(), reference_many<Type>(repeated, count, op, average_over),
                               "reduce_many(one source n times)", op, path);
          }
        }
      }
    });
  });
}

// Where reduce_many_to_gives_reduce_many_s_results puts its buffers: each placement
// takes another of the kernel's paths (reduce_op.cc).
enum class Placement {
  kOnLines,           // every target starts on a cache line
  kSameOffset,        // every target one element past a line: a head before the lines
  kDifferentOffsets,  // target t t elements past a line: the block path
  kOffAlignment,      // every buffer one byte past a line, off its elements' alignment
};

// A buffer of `bytes` starting `offset` bytes past a cache line, with guard bytes after.
struct Placed {
  Placed(size_t bytes, size_t offset) : storage(bytes + offset + 64 + kGuard * 8, kGuardByte) {
    const auto address = reinterpret_cast<uintptr_t>(storage.data());
    at = storage.data() + (64 - address % 64) % 64 + offset;
    end = bytes;
  }
  // A copy of the bytes, at the same offset in its own storage.
  Placed(const Placed& other)
      : storage(other.storage), at(storage.data() + (other.at - other.storage.data())), end(other.end) {}
  Placed& operator=(const Placed&) = delete;
  void check_guard(const char* what) const {
    for (size_t i = 0; i < kGuard * 8; ++i) cr_assert_eq(at[end + i], kGuardByte, "%s wrote past a target", what);
  }
  std::vector<unsigned char> storage;
  unsigned char* at;
  size_t end;
};

// reduce_many_to gives every target what reduce_many gives (the reference), with either
// stores, into one to three targets at every placement, from sources off their
// alignment too, and into a target that is one of the sources.
Test(reduce_op, reduce_many_to_gives_reduce_many_s_results_in_every_target, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      using Stored = typename Type::Stored;
      std::mt19937_64 rng(7);
      for (size_t count : kCounts) {
        const size_t bytes = count * sizeof(Stored);
        for (int n : {1, 2, 3}) {
          std::vector<std::vector<Stored>> sources;
          for (int k = 0; k < n; ++k) sources.push_back(random_values<Type>(count, rng));
          for (Placement placement :
               {Placement::kOnLines, Placement::kSameOffset, Placement::kDifferentOffsets, Placement::kOffAlignment}) {
            const auto offset = [&](int t) -> size_t {
              switch (placement) {
                case Placement::kOnLines: return 0;
                case Placement::kSameOffset: return sizeof(Stored);
                case Placement::kDifferentOffsets: return t * sizeof(Stored);
                case Placement::kOffAlignment: return 1;
              }
              return 0;
            };
            std::vector<Placed> placed_sources;
            for (int k = 0; k < n; ++k) {
              placed_sources.emplace_back(bytes, placement == Placement::kOffAlignment ? 1 : 0);
              if (count != 0) std::memcpy(placed_sources[k].at, sources[k].data(), bytes);
            }
            std::vector<const void*> pointers;
            for (const Placed& source : placed_sources) pointers.push_back(source.at);
            for (ReduceOp op : kOps) {
              const int average_over = n + 2;
              const auto want = reference_many<Type>(sources, count, op, average_over);
              for (Stores stores : {Stores::kPlain, Stores::kStreaming}) {
                const char* what = stores == Stores::kPlain ? "reduce_many_to(plain)" : "reduce_many_to(streaming)";
                for (int target_count = 1; target_count <= 3; ++target_count) {
                  std::vector<Placed> targets;
                  std::vector<void*> into;
                  for (int t = 0; t < target_count; ++t) targets.emplace_back(bytes, offset(t));
                  for (Placed& target : targets) into.push_back(target.at);
                  reduce_many_to(into.data(), target_count, pointers.data(), n, count, Type::dtype, op, average_over,
                                 stores);
                  std::vector<Stored> got(count);
                  for (const Placed& target : targets) {
                    if (count != 0) std::memcpy(got.data(), target.at, bytes);
                    expect_equal<Type>(got.data(), want, what, op, path);
                    target.check_guard(what);
                  }
                }
                if (count == 0) continue;
                // Target 0 is source 0 itself, as in an all_reduce in place.
                std::vector<Placed> aliased_sources = placed_sources;
                std::vector<const void*> aliased;
                for (const Placed& source : aliased_sources) aliased.push_back(source.at);
                Placed other(bytes, offset(1));
                void* both[] = {aliased_sources[0].at, other.at};
                reduce_many_to(both, 2, aliased.data(), n, count, Type::dtype, op, average_over, stores);
                for (void* target : both) {
                  std::vector<Stored> got(count);
                  std::memcpy(got.data(), target, bytes);
                  expect_equal<Type>(got.data(), want, "reduce_many_to(target 0 == source 0)", op, path);
                }
              }
            }
          }
        }
      }
    });
  });
}

// tutti.h takes void*: buffers one byte off their dtype's alignment, sources and dst,
// dst also being a source, give the reference's results. Reading them as typed pointers
// would be undefined behaviour, which the UBSan build (TUTTI_SANITIZE=undefined) reports.
Test(reduce_op, reduce_many_takes_buffers_at_any_address, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      using Stored = typename Type::Stored;
      std::mt19937_64 rng(6);
      for (size_t count : {size_t{1}, size_t{7}, size_t{2085}}) {
        for (int n : {1, 2, 3}) {
          std::vector<std::vector<Stored>> sources;
          for (int k = 0; k < n; ++k) sources.push_back(random_values<Type>(count, rng));
          const size_t bytes = count * sizeof(Stored);
          // Each buffer starts one byte into its own storage.
          std::vector<std::vector<unsigned char>> storage(n + 1, std::vector<unsigned char>(bytes + 1));
          std::vector<const void*> pointers;
          for (int k = 0; k < n; ++k) pointers.push_back(storage[k].data() + 1);
          unsigned char* dst = storage[n].data() + 1;
          for (ReduceOp op : kOps) {
            for (int k = 0; k < n; ++k) std::memcpy(storage[k].data() + 1, sources[k].data(), bytes);
            const auto want = reference_many<Type>(sources, count, op, n);
            std::vector<Stored> got(count);
            reduce_many(dst, pointers.data(), n, count, Type::dtype, op, n);
            std::memcpy(got.data(), dst, bytes);
            expect_equal<Type>(got.data(), want, "reduce_many(unaligned)", op, path);
            reduce_many(storage[0].data() + 1, pointers.data(), n, count, Type::dtype, op, n);
            std::memcpy(got.data(), storage[0].data() + 1, bytes);
            expect_equal<Type>(got.data(), want, "reduce_many(unaligned, dst == source 0)", op, path);
          }
        }
      }
    });
  });
}

Test(reduce_op, finish_average_divides_only_for_avg, .timeout = 60) {
  on_each_path([](const char* path) {
    for_each_type([&]<class Type>(Type) {
      std::mt19937_64 rng(5);
      for (size_t count : kCounts) {
        const auto values = random_values<Type>(count, rng);
        for (ReduceOp op : kOps) {
          for (int n : {1, 3, 200}) {
            Output<typename Type::Stored> dst(count);
            if (count != 0) std::memcpy(dst.data(), values.data(), count * sizeof values[0]);
            finish_average(dst.data(), count, Type::dtype, op, n);
            std::vector<typename Type::Stored> want = values;
            if (op == ReduceOp::kAvg) {
              for (auto& v : want) v = Type::narrow(reference_divide(Type::widen(v), n));
            }
            expect_equal<Type>(dst.data(), want, "finish_average", op, path);
            dst.check_guard("finish_average");
          }
        }
      }
    });
  });
}

Test(reduce_op, integers_wrap_as_twos_complement, .timeout = 10) {
  int8_t i8[] = {127, -128, -128, 100};
  const int8_t i8_by[] = {1, -1, -1, 3};
  reduce_inplace(i8, i8_by, 2, Dtype::kInt8, ReduceOp::kSum);
  reduce_inplace(i8 + 2, i8_by + 2, 2, Dtype::kInt8, ReduceOp::kProd);
  cr_assert_eq(i8[0], -128);
  cr_assert_eq(i8[1], 127);
  cr_assert_eq(i8[2], -128);  // -128 * -1 wraps back to -128.
  cr_assert_eq(i8[3], 44);    // 300 mod 256.

  uint8_t u8[] = {255, 16};
  const uint8_t u8_by[] = {1, 16};
  reduce_inplace(u8, u8_by, 1, Dtype::kUint8, ReduceOp::kSum);
  reduce_inplace(u8 + 1, u8_by + 1, 1, Dtype::kUint8, ReduceOp::kProd);
  cr_assert_eq(u8[0], 0);
  cr_assert_eq(u8[1], 0);

  int32_t i32[] = {INT32_MAX, 65536};
  const int32_t i32_by[] = {1, 65536};
  reduce_inplace(i32, i32_by, 1, Dtype::kInt32, ReduceOp::kSum);
  reduce_inplace(i32 + 1, i32_by + 1, 1, Dtype::kInt32, ReduceOp::kProd);
  cr_assert_eq(i32[0], INT32_MIN);
  cr_assert_eq(i32[1], 0);

  int64_t i64[] = {INT64_MIN, INT64_MAX};
  const int64_t i64_by[] = {-1, 2};
  reduce_inplace(i64, i64_by, 1, Dtype::kInt64, ReduceOp::kSum);
  reduce_inplace(i64 + 1, i64_by + 1, 1, Dtype::kInt64, ReduceOp::kProd);
  cr_assert_eq(i64[0], INT64_MAX);
  cr_assert_eq(i64[1], -2);
}

Test(reduce_op, integer_avg_wraps_the_sum_then_truncates_toward_zero, .timeout = 10) {
  const int8_t a[] = {100, -7, 7};
  const int8_t b[] = {100, 0, 0};
  const int8_t c[] = {100, 0, 0};
  const void* sources[] = {a, b, c};
  int8_t out[3];
  reduce_many(out, sources, 3, 3, Dtype::kInt8, ReduceOp::kAvg, 2);
  cr_assert_eq(out[0], 22);  // 300 wraps to 44 in int8, then 44 / 2.
  cr_assert_eq(out[1], -3);
  cr_assert_eq(out[2], 3);

  int32_t values[] = {-7, 7, -1};
  finish_average(values, 3, Dtype::kInt32, ReduceOp::kAvg, 2);
  cr_assert_eq(values[0], -3);
  cr_assert_eq(values[1], 3);
  cr_assert_eq(values[2], 0);

  uint8_t big[] = {250};
  finish_average(big, 1, Dtype::kUint8, ReduceOp::kAvg, 200);
  cr_assert_eq(big[0], 1);
}

Test(reduce_op, float_min_and_max_return_nan_when_either_side_is_nan, .timeout = 10) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float a[] = {nan, 1.0f, nan, -0.0f, 0.0f};
  const float b[] = {1.0f, nan, nan, 0.0f, -0.0f};
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    float out[5];
    reduce_into(out, a, b, 5, Dtype::kFloat32, op);
    cr_assert(std::isnan(out[0]) && std::isnan(out[1]) && std::isnan(out[2]), "%s lost a NaN", reduce_op_name(op));
    // Equal values keep the first operand, so the sign of a zero follows a, also when
    // dst is one of the inputs.
    cr_assert(std::signbit(out[3]) && !std::signbit(out[4]), "%s on +-0", reduce_op_name(op));
    float dst_is_a[] = {-0.0f, 0.0f};
    float dst_is_b[] = {0.0f, -0.0f};
    reduce_into(dst_is_a, dst_is_a, b + 3, 2, Dtype::kFloat32, op);
    reduce_into(dst_is_b, a + 3, dst_is_b, 2, Dtype::kFloat32, op);
    cr_assert(std::signbit(dst_is_a[0]) && !std::signbit(dst_is_a[1]), "%s on +-0, dst == a", reduce_op_name(op));
    cr_assert(std::signbit(dst_is_b[0]) && !std::signbit(dst_is_b[1]), "%s on +-0, dst == b", reduce_op_name(op));
  }
  on_each_path([](const char* path) {
    const uint16_t h[] = {0x7e00, 0x3c00};  // NaN, 1.0
    const uint16_t h_by[] = {0x3c00, 0x7e00};
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      uint16_t out[2];
      reduce_into(out, h, h_by, 2, Dtype::kFloat16, op);
      cr_assert(is_half_nan(out[0]) && is_half_nan(out[1]), "float16 %s lost a NaN (%s path)", reduce_op_name(op),
                path);
      // 0x7e00 is an ordinary bfloat16 number; only the bfloat16 NaN counts here.
      const uint16_t bf[] = {0x7fc0, 0x3f80};
      const uint16_t bf_by[] = {0x3f80, 0x7fc0};
      reduce_into(out, bf, bf_by, 2, Dtype::kBfloat16, op);
      cr_assert(is_bfloat16_nan(out[0]) && is_bfloat16_nan(out[1]), "bfloat16 %s lost a NaN (%s path)",
                reduce_op_name(op), path);
    }
  });
}

Test(reduce_op, sixteen_bit_sums_round_once_in_reduce_many, .timeout = 10) {
  // 2048 + 1 + 1 in float16: adding pairwise with rounding in between gives 2048 twice
  // (2049 is a tie that goes to the even 2048); accumulating in float32 gives 2050.
  const uint16_t big[] = {float_to_half(2048.0f)};
  const uint16_t one[] = {float_to_half(1.0f)};
  const void* sources[] = {big, one, one};
  uint16_t out[1];
  reduce_many(out, sources, 3, 1, Dtype::kFloat16, ReduceOp::kSum, 1);
  cr_assert_eq(half_to_float(out[0]), 2050.0f);
  reduce_into(out, big, one, 1, Dtype::kFloat16, ReduceOp::kSum);
  cr_assert_eq(half_to_float(out[0]), 2048.0f);
}

// ---- 16-bit conversions ----

Test(reduce_op, half_to_float_is_exact_for_every_pattern, .timeout = 10) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = half_to_float(h);
    const uint32_t exponent = (bits >> 10) & 0x1f;
    const uint32_t mantissa = bits & 0x3ff;
    const double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
    if (exponent == 0x1f && mantissa != 0) {
      const auto f_bits = std::bit_cast<uint32_t>(f);
      cr_assert(std::isnan(f), "0x%04x should be NaN", bits);
      cr_assert((f_bits & 0x00400000) != 0, "NaN 0x%04x should come back quiet", bits);
      cr_assert_eq((f_bits >> 13) & 0x1ff, mantissa & 0x1ff, "NaN 0x%04x lost its payload", bits);
      cr_assert_eq(std::signbit(f), (bits & 0x8000) != 0);
      continue;
    }
    double want;
    if (exponent == 0x1f) {
      want = sign * std::numeric_limits<double>::infinity();
    } else if (exponent == 0) {
      want = sign * std::ldexp(static_cast<double>(mantissa), -24);
    } else {
      want = sign * std::ldexp(static_cast<double>(1024 + mantissa), static_cast<int>(exponent) - 25);
    }
    cr_assert(static_cast<double>(f) == want && std::signbit(f) == (sign < 0), "0x%04x became %a, want %a", bits,
              static_cast<double>(f), want);
  }
}

Test(reduce_op, bfloat16_to_float_is_exact_for_every_pattern, .timeout = 10) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto f_bits = std::bit_cast<uint32_t>(bfloat16_to_float(static_cast<uint16_t>(bits)));
    if ((bits & 0x7fff) > 0x7f80) {
      cr_assert_eq(f_bits, (bits << 16) | 0x00400000, "NaN 0x%04x should keep its payload and be quiet", bits);
    } else {
      cr_assert_eq(f_bits, bits << 16, "0x%04x", bits);
    }
  }
}

// For every pair of neighbouring positive 16-bit (or 8-bit: Bits) values lo < hi up to
// the code `last` (for 16-bit floats inf, whose value here is beyond_max: the step past
// the largest finite value), checks that the float32 just below their midpoint goes to
// lo, just above to hi, and the midpoint itself to whichever is even, with the same on
// the negative side. That covers ties to even, the subnormals, and overflow.
template <class Bits = uint16_t, class Narrow, class Widen>
void check_rounding_at_every_boundary(Narrow narrow, Widen widen, std::type_identity_t<Bits> last, double beyond_max) {
  constexpr uint32_t kSignBit = 1u << (8 * sizeof(Bits) - 1);
  for (uint32_t lo = 0; lo < last; ++lo) {
    const uint32_t hi = lo + 1;
    const double lo_value = widen(static_cast<Bits>(lo));
    const double hi_value = hi == last ? beyond_max : widen(static_cast<Bits>(hi));
    // Exact: a midpoint needs one more bit than a 16-bit value has, far below float32's 24.
    const auto midpoint = static_cast<float>((lo_value + hi_value) / 2);
    const uint32_t even = (lo & 1) == 0 ? lo : hi;
    for (const uint32_t sign : {0u, kSignBit}) {
      const float s = sign != 0 ? -1.0f : 1.0f;
      const float below = std::nextafter(midpoint, 0.0f);
      const float above = std::nextafter(midpoint, std::numeric_limits<float>::infinity());
      cr_assert_eq(narrow(s * below), sign | lo, "just below the midpoint of 0x%04x and 0x%04x", lo, hi);
      cr_assert_eq(narrow(s * midpoint), sign | even, "the midpoint of 0x%04x and 0x%04x", lo, hi);
      cr_assert_eq(narrow(s * above), sign | hi, "just above the midpoint of 0x%04x and 0x%04x", lo, hi);
    }
  }
}

Test(reduce_op, float_to_half_rounds_to_nearest_even_everywhere, .timeout = 30) {
  check_rounding_at_every_boundary(float_to_half, half_to_float, 0x7c00, 65536.0f);
}

Test(reduce_op, float_to_bfloat16_rounds_to_nearest_even_everywhere, .timeout = 30) {
  // Past the largest bfloat16 (and float32), the next step of its binade would be 2^128.
  check_rounding_at_every_boundary(float_to_bfloat16, bfloat16_to_float, 0x7f80, 0x1p128);
}

// tutti_float16.h, the public header-only conversions (the Lua module, the C++ wrapper
// and the bench use them), rounds as the kernels do: the same boundaries, and the same
// value for every 16-bit pattern both ways (NaN for NaN: the kernels keep a payload,
// the header makes a plain quiet NaN).
Test(reduce_op, the_public_header_converts_as_the_kernels_do, .timeout = 60) {
  auto header_half = [](float v) { return tutti_float16_from_double(v); };
  auto header_bfloat16 = [](float v) { return tutti_bfloat16_from_double(v); };
  check_rounding_at_every_boundary(header_half, half_to_float, 0x7c00, 65536.0f);
  check_rounding_at_every_boundary(header_bfloat16, bfloat16_to_float, 0x7f80, 0x1p128);
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const double half = tutti_float16_to_double(b), bfloat16 = tutti_bfloat16_to_double(b);
    if (std::isnan(half_to_float(b))) {
      cr_assert(std::isnan(half) && tutti_float16_from_double(half) == (b & 0x8000) + 0x7e00, "float16 0x%04x", bits);
    } else {
      cr_assert(half == static_cast<double>(half_to_float(b)) && std::signbit(half) == ((b & 0x8000) != 0),
                "float16 0x%04x: %a, the kernels %a", bits, half, static_cast<double>(half_to_float(b)));
      cr_assert_eq(tutti_float16_from_double(half), b, "float16 0x%04x does not come back", bits);
    }
    if (std::isnan(bfloat16_to_float(b))) {
      cr_assert(std::isnan(bfloat16) && tutti_bfloat16_from_double(bfloat16) == (b & 0x8000) + 0x7fc0,
                "bfloat16 0x%04x", bits);
    } else {
      cr_assert(bfloat16 == static_cast<double>(bfloat16_to_float(b)), "bfloat16 0x%04x", bits);
      cr_assert_eq(tutti_bfloat16_from_double(bfloat16), b, "bfloat16 0x%04x does not come back", bits);
    }
  }
}

Test(reduce_op, float_to_half_edge_cases, .timeout = 10) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    float value;
    uint16_t half;
  };
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {65504.0f, 0x7bff},
      {65519.996f, 0x7bff},
      {65520.0f, 0x7c00},
      {-65520.0f, 0xfc00},
      {1e6f, 0x7c00},
      {std::numeric_limits<float>::max(), 0x7c00},
      {inf, 0x7c00},
      {-inf, 0xfc00},
      {0x1p-14f, 0x0400},
      {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000},
      {-0x1p-25f, 0x8000},
      {0x1.000002p-25f, 0x0001},
      {0x1.8p-24f, 0x0002},
      {0x1.4p-24f, 0x0001},
      {0x1p-26f, 0x0000},
      {std::numeric_limits<float>::denorm_min(), 0x0000},
      {1.0f + 0x1p-11f, 0x3c00},             // tie, 1.0 is even
      {1.0f + 0x1p-10f + 0x1p-11f, 0x3c02},  // tie, rounds up to even
      {0x1.ffcp-15f, 0x0400},                // halfway from the largest subnormal to the smallest normal: even
  };
  for (const Case& c : cases) {
    cr_assert_eq(float_to_half(c.value), c.half, "float_to_half(%a) = 0x%04x, want 0x%04x",
                 static_cast<double>(c.value), float_to_half(c.value), c.half);
  }
  // NaNs stay NaN and come out quiet, even one whose payload is only in the low bits.
  for (const uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u}) {
    const uint16_t h = float_to_half(std::bit_cast<float>(nan));
    cr_assert(is_half_nan(h) && (h & 0x0200) != 0, "NaN 0x%08x became 0x%04x", nan, h);
    cr_assert_eq(h & 0x8000, (nan >> 16) & 0x8000);
  }
}

Test(reduce_op, float_to_bfloat16_edge_cases, .timeout = 10) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    uint32_t value;
    uint16_t bfloat16;
  };
  const Case cases[] = {
      {0x00000000, 0x0000},
      {0x80000000, 0x8000},
      {0x3f800000, 0x3f80},
      {0x3f808000, 0x3f80},  // tie, stays even
      {0x3f818000, 0x3f82},  // tie, rounds up to even
      {0x3f808001, 0x3f81},
      {0x7f7f7fff, 0x7f7f},
      {0x7f7f8000, 0x7f80},  // max finite, overflow by a tie
      {std::bit_cast<uint32_t>(std::numeric_limits<float>::max()), 0x7f80},
      {std::bit_cast<uint32_t>(inf), 0x7f80},
      {std::bit_cast<uint32_t>(-inf), 0xff80},
      {0x00008000, 0x0000},  // subnormal tie goes to the even zero
      {0x00018000, 0x0002},
      {0x00008001, 0x0001},
      {0x807fffff, 0x8080},
  };
  for (const Case& c : cases) {
    cr_assert_eq(float_to_bfloat16(std::bit_cast<float>(c.value)), c.bfloat16,
                 "float_to_bfloat16(0x%08x) = 0x%04x, want 0x%04x", c.value,
                 float_to_bfloat16(std::bit_cast<float>(c.value)), c.bfloat16);
  }
  for (const uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u}) {
    const uint16_t b = float_to_bfloat16(std::bit_cast<float>(nan));
    cr_assert(is_bfloat16_nan(b) && (b & 0x0040) != 0, "NaN 0x%08x became 0x%04x", nan, b);
    cr_assert_eq(b & 0x8000, (nan >> 16) & 0x8000);
  }
}

// ---- 8-bit conversions ----

// What an fp8 code means, from the OCP definition written out: e4m3 (bias 7, 3
// mantissa bits, S.1111.111 NaN, no infinity) or e5m2 (bias 15, 2 mantissa bits,
// exponent 31 for inf and NaN).
double fp8_meaning(Dtype dtype, uint8_t bits) {
  const bool e4m3 = dtype == Dtype::kFloat8E4m3;
  const int mantissa_bits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int exponent = (bits & 0x7f) >> mantissa_bits;
  const int mantissa = bits & ((1 << mantissa_bits) - 1);
  const double sign = (bits & 0x80) != 0 ? -1.0 : 1.0;
  if (e4m3 ? (bits & 0x7f) == 0x7f : exponent == 31 && mantissa != 0) return std::nan("");
  if (!e4m3 && exponent == 31) return sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
  return sign * std::ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits);
}

// All 256 codes of both formats: widened exactly, and back to the same code (a NaN to a
// NaN of its sign, quiet: e4m3 has one, e5m2 keeps the payload's top bit); the public
// header agrees with the kernels on every code.
Test(reduce_op, every_fp8_code_widens_exactly_and_comes_back, .timeout = 10) {
  for (const Dtype dtype : {Dtype::kFloat8E4m3, Dtype::kFloat8E5m2}) {
    const bool e4m3 = dtype == Dtype::kFloat8E4m3;
    for (uint32_t code = 0; code <= 0xff; ++code) {
      const auto bits = static_cast<uint8_t>(code);
      const float wide = e4m3 ? float8_e4m3_to_float(bits) : float8_e5m2_to_float(bits);
      const uint8_t back = e4m3 ? float_to_float8_e4m3(wide) : float_to_float8_e5m2(wide);
      const double header = e4m3 ? tutti_float8_e4m3_to_double(bits) : tutti_float8_e5m2_to_double(bits);
      const uint8_t header_back = e4m3 ? tutti_float8_e4m3_from_double(header) : tutti_float8_e5m2_from_double(header);
      const double want = fp8_meaning(dtype, bits);
      if (std::isnan(want)) {
        const uint8_t quiet = e4m3 ? (bits | 0x7f) : (bits | 0x02);
        cr_assert(std::isnan(wide) && std::signbit(wide) == ((bits & 0x80) != 0), "%s 0x%02x should widen to NaN",
                  dtype_name(dtype), code);
        cr_assert_eq(back, quiet, "%s NaN 0x%02x came back as 0x%02x", dtype_name(dtype), code, back);
        cr_assert(std::isnan(header), "%s 0x%02x: the header's value", dtype_name(dtype), code);
        cr_assert_eq(header_back, (bits & 0x80) | (e4m3 ? 0x7f : 0x7e), "%s 0x%02x: the header's NaN",
                     dtype_name(dtype), code);
        continue;
      }
      cr_assert(static_cast<double>(wide) == want && std::signbit(wide) == std::signbit(want),
                "%s 0x%02x became %a, want %a", dtype_name(dtype), code, static_cast<double>(wide), want);
      cr_assert(header == want && std::signbit(header) == std::signbit(want), "%s 0x%02x: the header gives %a",
                dtype_name(dtype), code, header);
      // e5m2's infinities saturate on the way back, as every reduction's result does.
      const uint8_t want_back = !e4m3 && std::isinf(want) ? static_cast<uint8_t>((bits & 0x80) | 0x7b) : bits;
      cr_assert_eq(back, want_back, "%s 0x%02x came back as 0x%02x", dtype_name(dtype), code, back);
      cr_assert_eq(header_back, want_back, "%s 0x%02x: the header gives back 0x%02x", dtype_name(dtype), code,
                   header_back);
    }
  }
}

// Ties to even between every pair of neighbouring finite values, subnormals included,
// in the kernels and the public header alike. Past the largest finite value the last
// pair's midpoint and beyond saturate (float_to_fp8_saturates_and_keeps_nan).
Test(reduce_op, float_to_fp8_rounds_to_nearest_even_everywhere, .timeout = 10) {
  auto header_e4m3 = [](float v) { return tutti_float8_e4m3_from_double(v); };
  auto header_e5m2 = [](float v) { return tutti_float8_e5m2_from_double(v); };
  check_rounding_at_every_boundary<uint8_t>(float_to_float8_e4m3, float8_e4m3_to_float, 0x7e, 448.0);
  check_rounding_at_every_boundary<uint8_t>(header_e4m3, float8_e4m3_to_float, 0x7e, 448.0);
  check_rounding_at_every_boundary<uint8_t>(float_to_float8_e5m2, float8_e5m2_to_float, 0x7b, 57344.0);
  check_rounding_at_every_boundary<uint8_t>(header_e5m2, float8_e5m2_to_float, 0x7b, 57344.0);
}

Test(reduce_op, float_to_fp8_saturates_and_keeps_nan, .timeout = 10) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    float value;
    uint8_t e4m3, e5m2;
  };
  const Case cases[] = {
      {0.0f, 0x00, 0x00},
      {-0.0f, 0x80, 0x80},
      {1.0f, 0x38, 0x3c},
      {-1.5f, 0xbc, 0xbe},
      {448.0f, 0x7e, 0x5f},    // e4m3's largest; e5m2 rounds 448 to 1.11 x 2^8
      {464.0f, 0x7e, 0x5f},    // e4m3: the tie above 448 goes to the even 448
      {465.0f, 0x7e, 0x5f},    // e4m3: nearer 480, which is NaN's code: saturates
      {-1000.0f, 0xfe, 0xe4},  // e4m3 saturates; e5m2 rounds to -1024
      {57344.0f, 0x7e, 0x7b},  // e5m2's largest
      {61440.0f, 0x7e, 0x7b},  // e5m2: the tie above 57344 would round to inf: saturates
      {1e6f, 0x7e, 0x7b},
      {std::numeric_limits<float>::max(), 0x7e, 0x7b},
      {inf, 0x7e, 0x7b},  // infinity saturates too
      {-inf, 0xfe, 0xfb},
      {0x1p-6f, 0x08, 0x24},   // e4m3's smallest normal
      {0x1p-9f, 0x01, 0x18},   // e4m3's smallest subnormal
      {0x1p-10f, 0x00, 0x14},  // e4m3: a tie between 0 and 2^-9 goes to the even 0
      {-0x1p-10f, 0x80, 0x94},
      {0x1.000002p-10f, 0x01, 0x14},
      {0x1.8p-9f, 0x02, 0x1a},       // e4m3: 1.5 units, a tie, rounds up to the even 2
      {0x1.ep-7f, 0x08, 0x24},       // e4m3: 7.5 units, the tie below the smallest normal: even
      {0x1p-14f, 0x00, 0x04},        // e5m2's smallest normal
      {0x1p-16f, 0x00, 0x01},        // e5m2's smallest subnormal
      {0x1p-17f, 0x00, 0x00},        // e5m2: the tie with 0
      {1.0f + 0x1p-4f, 0x38, 0x3c},  // e4m3: a tie, 1.0 is even
      {1.0f + 0x1p-3f + 0x1p-4f, 0x3a, 0x3d},
  };
  for (const Case& c : cases) {
    cr_assert_eq(float_to_float8_e4m3(c.value), c.e4m3, "float_to_float8_e4m3(%a) = 0x%02x, want 0x%02x",
                 static_cast<double>(c.value), float_to_float8_e4m3(c.value), c.e4m3);
    cr_assert_eq(float_to_float8_e5m2(c.value), c.e5m2, "float_to_float8_e5m2(%a) = 0x%02x, want 0x%02x",
                 static_cast<double>(c.value), float_to_float8_e5m2(c.value), c.e5m2);
    cr_assert_eq(tutti_float8_e4m3_from_double(c.value), c.e4m3, "the header's e4m3 of %a",
                 static_cast<double>(c.value));
    cr_assert_eq(tutti_float8_e5m2_from_double(c.value), c.e5m2, "the header's e5m2 of %a",
                 static_cast<double>(c.value));
  }
  // NaNs stay NaN with their sign, e5m2's quiet, even one whose payload is only in the
  // low bits.
  for (const uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u}) {
    const uint8_t e4m3 = float_to_float8_e4m3(std::bit_cast<float>(nan));
    const uint8_t e5m2 = float_to_float8_e5m2(std::bit_cast<float>(nan));
    cr_assert_eq(e4m3, ((nan >> 24) & 0x80) | 0x7f, "NaN 0x%08x became e4m3 0x%02x", nan, e4m3);
    cr_assert(is_e5m2_nan(e5m2) && (e5m2 & 0x02) != 0, "NaN 0x%08x became e5m2 0x%02x", nan, e5m2);
    cr_assert_eq(e5m2 & 0x80, (nan >> 24) & 0x80);
  }
}

// A reduction rounds once per step, saturates, and keeps NaN.
Test(reduce_op, fp8_reductions_saturate_and_round_once_in_reduce_many, .timeout = 10) {
  const uint8_t big[] = {0x7e, 0xfe};  // e4m3 448, -448
  uint8_t out[2];
  reduce_into(out, big, big, 2, Dtype::kFloat8E4m3, ReduceOp::kSum);
  cr_assert(out[0] == 0x7e && out[1] == 0xfe, "448 + 448 saturates: 0x%02x 0x%02x", out[0], out[1]);
  reduce_into(out, big, big, 2, Dtype::kFloat8E4m3, ReduceOp::kProd);
  cr_assert(out[0] == 0x7e && out[1] == 0x7e, "448 * 448 saturates: 0x%02x 0x%02x", out[0], out[1]);
  const uint8_t inf[] = {0x7c, 0xfc}, one[] = {0x3c, 0x3c};  // e5m2 inf, -inf, 1
  reduce_into(out, inf, one, 2, Dtype::kFloat8E5m2, ReduceOp::kMax);
  cr_assert(out[0] == 0x7b && out[1] == 0x3c, "max(inf, 1) saturates: 0x%02x 0x%02x", out[0], out[1]);
  const uint8_t nan[] = {0x7f, 0xff};
  reduce_into(out, nan, big, 2, Dtype::kFloat8E4m3, ReduceOp::kMin);
  cr_assert(is_e4m3_nan(out[0]) && is_e4m3_nan(out[1]), "min with NaN is NaN: 0x%02x 0x%02x", out[0], out[1]);
  // e4m3 16 + 1 + 1: each step rounds 17 to the even 16; one rounding of 18 is exact.
  const uint8_t sixteen[] = {0x58}, unit[] = {0x38};
  const void* sources[] = {sixteen, unit, unit};
  reduce_many(out, sources, 3, 1, Dtype::kFloat8E4m3, ReduceOp::kSum, 1);
  cr_assert_eq(float8_e4m3_to_float(out[0]), 18.0f);
  reduce_into(out, sixteen, unit, 1, Dtype::kFloat8E4m3, ReduceOp::kSum);
  cr_assert_eq(float8_e4m3_to_float(out[0]), 16.0f);
  // AVG divides the float32 sum once: (1 + 1 + 2) / 3 = 1.33.. rounds to 1.375.
  const uint8_t two[] = {0x40};
  const void* three[] = {unit, unit, two};
  reduce_many(out, three, 3, 1, Dtype::kFloat8E4m3, ReduceOp::kAvg, 3);
  cr_assert_eq(float8_e4m3_to_float(out[0]), 1.375f);
}

// ---- the two kernels of the narrow floats ----

// Whether bits are a NaN of the narrow float dtype.
bool is_nan_of(Dtype dtype, unsigned bits) {
  switch (dtype) {
    case Dtype::kFloat16: return is_half_nan(static_cast<uint16_t>(bits));
    case Dtype::kBfloat16: return is_bfloat16_nan(static_cast<uint16_t>(bits));
    case Dtype::kFloat8E4m3: return is_e4m3_nan(static_cast<uint8_t>(bits));
    case Dtype::kFloat8E5m2: return is_e5m2_nan(static_cast<uint8_t>(bits));
    default: return false;
  }
}

// Runs reduce_many with each set of kernels and fails on the first element where they
// differ in any bit, but for which NaN a NaN is: of two NaN inputs, x86's adds and
// multiplies return the first operand's, and the compiler may order a vector's
// operands otherwise than a scalar's. Bits: uint16_t for the 16-bit floats, uint8_t for
// the 8-bit ones.
template <class Bits>
void expect_kernels_agree(Dtype dtype, const std::vector<const void*>& sources, size_t count, ReduceOp op,
                          int average_over, const char* what) {
  std::vector<Bits> out[2];
  for (int path = 0; path < 2; ++path) {
    cr_assert(use_kernels(path == 0 ? Kernels::kPortable : Kernels::kAvx2));
    out[path].assign(count, 0);
    reduce_many(out[path].data(), sources.data(), static_cast<int>(sources.size()), count, dtype, op, average_over);
  }
  for (size_t i = 0; i < count; ++i) {
    if (out[0][i] != out[1][i] && !(is_nan_of(dtype, out[0][i]) && is_nan_of(dtype, out[1][i]))) {
      std::vector<unsigned> inputs;
      for (const void* s : sources) inputs.push_back(static_cast<const Bits*>(s)[i]);
      cr_assert_fail("%s %s %s of 0x%04x, 0x%04x: portable 0x%04x, avx2 0x%04x", dtype_name(dtype), reduce_op_name(op),
                     what, inputs[0], inputs.size() > 1 ? inputs[1] : 0u, unsigned{out[0][i]}, unsigned{out[1][i]});
    }
  }
}

Test(reduce_op, vector_and_portable_kernels_round_every_pattern_alike, .timeout = 60) {
  if (!use_kernels(Kernels::kAvx2)) {
    std::printf("SKIPPED (no F16C/AVX2 on this CPU)\n");
    return;
  }
  // Every 16-bit pattern, once through unchanged (widen and round back), and then
  // against partners chosen to make float32 results that must be rounded: sums of
  // values 2^-12 .. 2^12 apart land on and around the ties of both formats, products
  // and quotients by 3 give arbitrary low bits, and 0.5 halves subnormals into ties.
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (const Dtype dtype : {Dtype::kFloat16, Dtype::kBfloat16}) {
    const auto narrow = dtype == Dtype::kFloat16 ? float_to_half : float_to_bfloat16;
    expect_kernels_agree<uint16_t>(dtype, {all.data()}, all.size(), ReduceOp::kSum, 1, "widened and rounded back");
    expect_kernels_agree<uint16_t>(dtype, {all.data()}, all.size(), ReduceOp::kAvg, 3, "divided by 3");
    std::vector<float> partners = {0.5f, 3.0f, -1.0f, 65504.0f, 0x1p-24f, 0x1p-133f};
    for (int e = -12; e <= 12; ++e) {
      partners.push_back(std::ldexp(1.0f, e));
      partners.push_back(-std::ldexp(1.0f, e) * 1.5f);
    }
    for (const float partner : partners) {
      // Partners outside a format's range just round to its nearest value.
      const std::vector<uint16_t> other(all.size(), narrow(partner));
      for (ReduceOp op : kOps) {
        expect_kernels_agree<uint16_t>(dtype, {all.data(), other.data()}, all.size(), op, 3, "pair");
      }
    }
  }
}

Test(reduce_op, vector_and_portable_kernels_agree_on_random_sources, .timeout = 30) {
  if (!use_kernels(Kernels::kAvx2)) {
    std::printf("SKIPPED (no F16C/AVX2 on this CPU)\n");
    return;
  }
  std::mt19937_64 rng(7);
  const size_t count = 3001;
  std::vector<std::vector<uint16_t>> sources(5, std::vector<uint16_t>(count));
  for (auto& s : sources) {
    for (auto& v : s) v = static_cast<uint16_t>(rng());
  }
  for (const Dtype dtype : {Dtype::kFloat16, Dtype::kBfloat16}) {
    for (int n = 1; n <= 5; ++n) {
      std::vector<const void*> pointers;
      for (int k = 0; k < n; ++k) pointers.push_back(sources[k].data());
      for (ReduceOp op : kOps) expect_kernels_agree<uint16_t>(dtype, pointers, count, op, n, "random");
    }
  }
}

// Every pair of 8-bit patterns (65,536, each pattern against each), alone (widened and
// rounded back), divided by 3, and in threes with a third source that pushes sums past
// the largest value and onto ties; then random sources, one to five.
Test(reduce_op, vector_and_portable_kernels_agree_on_every_8bit_pair, .timeout = 60) {
  if (!use_kernels(Kernels::kAvx2)) {
    std::printf("SKIPPED (no F16C/AVX2 on this CPU)\n");
    return;
  }
  std::vector<uint8_t> left(65536), right(65536);
  for (size_t i = 0; i < left.size(); ++i) {
    left[i] = static_cast<uint8_t>(i >> 8);
    right[i] = static_cast<uint8_t>(i);
  }
  for (const Dtype dtype : {Dtype::kFloat8E4m3, Dtype::kFloat8E5m2}) {
    const auto narrow = dtype == Dtype::kFloat8E4m3 ? float_to_float8_e4m3 : float_to_float8_e5m2;
    expect_kernels_agree<uint8_t>(dtype, {right.data()}, 256, ReduceOp::kSum, 1, "widened and rounded back");
    expect_kernels_agree<uint8_t>(dtype, {right.data()}, 256, ReduceOp::kAvg, 3, "divided by 3");
    for (ReduceOp op : kOps) {
      expect_kernels_agree<uint8_t>(dtype, {left.data(), right.data()}, left.size(), op, 3, "pair");
      for (const float third : {0.75f, -3.0f, 448.0f, 0x1p-10f}) {
        const std::vector<uint8_t> other(left.size(), narrow(third));
        expect_kernels_agree<uint8_t>(dtype, {left.data(), right.data(), other.data()}, left.size(), op, 3, "three");
      }
    }
    std::mt19937_64 rng(8);
    const size_t count = 3001;
    std::vector<std::vector<uint8_t>> sources(5, std::vector<uint8_t>(count));
    for (auto& source : sources) {
      for (auto& v : source) v = static_cast<uint8_t>(rng());
    }
    for (int n = 1; n <= 5; ++n) {
      std::vector<const void*> pointers;
      for (int k = 0; k < n; ++k) pointers.push_back(sources[k].data());
      for (ReduceOp op : kOps) expect_kernels_agree<uint8_t>(dtype, pointers, count, op, n, "random");
    }
  }
}
