// tutti/buffer.hpp: what the collectives take instead of (pointer, count, dtype): a view
// of memory the caller owns, like C++20's std::span, with its tutti_dtype worked out at
// compile time from the element type.
//
//   std::vector<float> v(1024);        tutti::Buffer b = v;        // float32 x 1024
//   std::array<int64_t, 4> a;          tutti::ConstBuffer c = a;   // int64 x 4
//   int32_t raw[8];                    tutti::Buffer r = raw;      // int32 x 8
//   tutti::Buffer p(ptr, n);           tutti::Buffer h(bits, n, TUTTI_DTYPE_FLOAT16);
//
// Anything with std::data and std::size (vectors, arrays, C arrays, std::span) of an
// element type that has a DtypeOf converts implicitly, so a collective takes the
// container itself. A view owns nothing: the memory must outlive the operation, which
// for an asynchronous one means until its Work has finished. Only lvalues convert, so
// that a temporary cannot be handed to an operation that outlives it.
#ifndef TUTTI_CPP_BUFFER_HPP
#define TUTTI_CPP_BUFFER_HPP

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <utility>

#include "tutti.h"
#include "tutti/float16.hpp"
#include "tutti/float8.hpp"

namespace tutti {

// The tutti_dtype of an element type; specialise it for a type of your own with the
// same representation as one of tutti's.
template <class T>
struct DtypeOf {};
template <class T, tutti_dtype D>
struct DtypeIs {
  static_assert(std::is_trivially_copyable_v<T>, "a buffer's elements are copied as bytes");
  static constexpr tutti_dtype value = D;
};
template <>
struct DtypeOf<int8_t> : DtypeIs<int8_t, TUTTI_DTYPE_INT8> {};
template <>
struct DtypeOf<uint8_t> : DtypeIs<uint8_t, TUTTI_DTYPE_UINT8> {};
template <>
struct DtypeOf<int32_t> : DtypeIs<int32_t, TUTTI_DTYPE_INT32> {};
template <>
struct DtypeOf<int64_t> : DtypeIs<int64_t, TUTTI_DTYPE_INT64> {};
template <>
struct DtypeOf<Float16> : DtypeIs<Float16, TUTTI_DTYPE_FLOAT16> {};
template <>
struct DtypeOf<BFloat16> : DtypeIs<BFloat16, TUTTI_DTYPE_BFLOAT16> {};
template <>
struct DtypeOf<float> : DtypeIs<float, TUTTI_DTYPE_FLOAT32> {};
template <>
struct DtypeOf<double> : DtypeIs<double, TUTTI_DTYPE_FLOAT64> {};
template <>
struct DtypeOf<Float8E4m3> : DtypeIs<Float8E4m3, TUTTI_DTYPE_FLOAT8_E4M3> {};
template <>
struct DtypeOf<Float8E5m2> : DtypeIs<Float8E5m2, TUTTI_DTYPE_FLOAT8_E5M2> {};

// "float32" and so on, for messages.
constexpr const char* dtype_name(tutti_dtype dtype) noexcept {
  switch (dtype) {
    case TUTTI_DTYPE_INT8: return "int8";
    case TUTTI_DTYPE_UINT8: return "uint8";
    case TUTTI_DTYPE_INT32: return "int32";
    case TUTTI_DTYPE_INT64: return "int64";
    case TUTTI_DTYPE_FLOAT16: return "float16";
    case TUTTI_DTYPE_BFLOAT16: return "bfloat16";
    case TUTTI_DTYPE_FLOAT32: return "float32";
    case TUTTI_DTYPE_FLOAT64: return "float64";
    case TUTTI_DTYPE_FLOAT8_E4M3: return "float8_e4m3";
    case TUTTI_DTYPE_FLOAT8_E5M2: return "float8_e5m2";
  }
  return "an unknown dtype";
}

namespace detail {

template <class T, class = void>
struct HasDtype : std::false_type {};
template <class T>
struct HasDtype<T, std::void_t<decltype(DtypeOf<T>::value)>> : std::true_type {};

// The element type of a container C as std::data sees it (const for a const container).
template <class C>
using ElementOf = std::remove_pointer_t<decltype(std::data(std::declval<C&>()))>;

}  // namespace detail

// Void is void (Buffer, written by an operation) or const void (ConstBuffer, only read).
template <class Void>
class BasicBuffer {
  // A pointer to U fits: U has a dtype, and is not const where the buffer is written.
  template <class U>
  static constexpr bool kFits = detail::HasDtype<std::remove_const_t<U>>::value&& std::is_convertible_v<U*, Void*>;

 public:
  // No memory: for the buffers an operation does not use on this rank (the receive
  // buffer of reduce off its root, say), as NULL is in C.
  constexpr BasicBuffer() noexcept = default;

  // Untyped memory with its dtype given by hand, e.g. uint16_t bits of bfloat16.
  constexpr BasicBuffer(Void* data, size_t count, tutti_dtype dtype) noexcept
      : data_(data), count_(count), dtype_(dtype) {}

  template <class U, std::enable_if_t<kFits<U>, int> = 0>
  constexpr BasicBuffer(U* data, size_t count) noexcept
      : BasicBuffer(data, count, DtypeOf<std::remove_const_t<U>>::value) {}

  template <class C, std::enable_if_t<kFits<detail::ElementOf<C>>, int> = 0>
  constexpr BasicBuffer(C& container) noexcept  // NOLINT: implicit, as std::span's
      : BasicBuffer(std::data(container), std::size(container)) {}

  // A Buffer is also a ConstBuffer.
  template <class Other,
            std::enable_if_t<!std::is_same_v<Other, Void> && std::is_convertible_v<Other*, Void*>, int> = 0>
  constexpr BasicBuffer(const BasicBuffer<Other>& other) noexcept  // NOLINT: implicit
      : BasicBuffer(other.data(), other.size(), other.dtype()) {}

  constexpr Void* data() const noexcept { return data_; }
  // Elements, not bytes.
  constexpr size_t size() const noexcept { return count_; }
  constexpr tutti_dtype dtype() const noexcept { return dtype_; }

 private:
  Void* data_ = nullptr;
  size_t count_ = 0;
  tutti_dtype dtype_ = TUTTI_DTYPE_UINT8;
};

using Buffer = BasicBuffer<void>;
using ConstBuffer = BasicBuffer<const void>;

}  // namespace tutti

#endif  // TUTTI_CPP_BUFFER_HPP
