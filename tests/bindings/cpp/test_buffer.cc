// tutti::Buffer and the 16-bit and 8-bit floats, in one process: the dtype every
// element type gets at compile time, what converts to a Buffer and what does not
// (static_asserts, so a wrong answer stops the build), and the float16, bfloat16 and
// fp8 conversions on the values where rounding, subnormals, infinities, saturation and
// NaN are decided.
//   build/tests/bindings.cpp.test_buffer
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/bindings/cpp/check.hpp"
#include "tutti/tutti.hpp"

namespace {

using tutti::Buffer;
using tutti::ConstBuffer;

static_assert(tutti::DtypeOf<int8_t>::value == TUTTI_DTYPE_INT8);
static_assert(tutti::DtypeOf<uint8_t>::value == TUTTI_DTYPE_UINT8);
static_assert(tutti::DtypeOf<int32_t>::value == TUTTI_DTYPE_INT32);
static_assert(tutti::DtypeOf<int64_t>::value == TUTTI_DTYPE_INT64);
static_assert(tutti::DtypeOf<tutti::Float16>::value == TUTTI_DTYPE_FLOAT16);
static_assert(tutti::DtypeOf<tutti::BFloat16>::value == TUTTI_DTYPE_BFLOAT16);
static_assert(tutti::DtypeOf<float>::value == TUTTI_DTYPE_FLOAT32);
static_assert(tutti::DtypeOf<double>::value == TUTTI_DTYPE_FLOAT64);
static_assert(tutti::DtypeOf<tutti::Float8E4m3>::value == TUTTI_DTYPE_FLOAT8_E4M3);
static_assert(tutti::DtypeOf<tutti::Float8E5m2>::value == TUTTI_DTYPE_FLOAT8_E5M2);

// Containers of a type with a dtype convert; others, and temporaries, do not.
static_assert(std::is_convertible_v<std::vector<float>&, Buffer>);
static_assert(std::is_convertible_v<std::array<int32_t, 4>&, Buffer>);
static_assert(std::is_convertible_v<int64_t (&)[3], Buffer>);
static_assert(std::is_convertible_v<const std::vector<double>&, ConstBuffer>);
static_assert(std::is_convertible_v<std::vector<double>&, ConstBuffer>);
static_assert(std::is_convertible_v<Buffer, ConstBuffer>);
static_assert(!std::is_convertible_v<const std::vector<float>&, Buffer>, "const memory is not written");
static_assert(!std::is_convertible_v<ConstBuffer, Buffer>, "a ConstBuffer is only read");
static_assert(!std::is_convertible_v<std::vector<float>&&, ConstBuffer>, "a temporary would die too early");
static_assert(!std::is_convertible_v<std::vector<uint16_t>&, Buffer>, "uint16_t has no dtype: give it by hand");
static_assert(!std::is_convertible_v<std::vector<char>&, Buffer>, "char has no dtype");
static_assert(!std::is_constructible_v<Buffer, void*, size_t>, "untyped memory needs its dtype");

void views() {
  std::vector<double> v(5);
  const Buffer b = v;
  CHECK(b.data() == v.data() && b.size() == 5 && b.dtype() == TUTTI_DTYPE_FLOAT64, "a vector's view");
  int32_t raw[7] = {};
  const ConstBuffer c = raw;
  CHECK(c.data() == raw && c.size() == 7 && c.dtype() == TUTTI_DTYPE_INT32, "a C array's view");
  const ConstBuffer from_buffer = b;
  CHECK(from_buffer.data() == v.data() && from_buffer.size() == 5, "a Buffer as a ConstBuffer");
  std::vector<uint16_t> bits(4);
  const Buffer typed(bits.data(), bits.size(), TUTTI_DTYPE_FLOAT16);
  CHECK(typed.dtype() == TUTTI_DTYPE_FLOAT16 && typed.size() == 4, "raw bits with their dtype given");
  const Buffer none;
  CHECK(none.data() == nullptr && none.size() == 0, "an empty Buffer");
  CHECK(std::string(tutti::dtype_name(TUTTI_DTYPE_BFLOAT16)) == "bfloat16", "dtype_name");
}

// Bits from the IEEE 754 tables, both ways.
void float16() {
  struct Case {
    float value;
    uint16_t bits;
  };
  const Case exact[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {65504.0f, 0x7bff},
      {6.103515625e-05f, 0x0400},  // the smallest normal
      {5.9604645e-08f, 0x0001},    // the smallest subnormal, 2^-24
      {std::numeric_limits<float>::infinity(), 0x7c00},
  };
  for (const Case& c : exact) {
    CHECK(tutti::Float16::from_float(c.value).bits == c.bits, "float16 of " + std::to_string(c.value));
    CHECK(tutti::Float16{c.bits}.to_float() == c.value, "float of float16 bits " + std::to_string(c.bits));
  }
  // Ties round to even; 65520 and above round to infinity; NaN stays NaN.
  CHECK(tutti::Float16::from_float(1.0f + 1.0f / 2048).bits == 0x3c00, "1 + 2^-11 rounds down to even");
  CHECK(tutti::Float16::from_float(1.0f + 3.0f / 2048).bits == 0x3c02, "1 + 3 * 2^-11 rounds up to even");
  CHECK(tutti::Float16::from_float(65520.0f).bits == 0x7c00, "65520 overflows to infinity");
  CHECK(tutti::Float16::from_float(1e-8f).bits == 0x0000, "1e-8 underflows to 0");
  CHECK(std::isnan(tutti::Float16::from_float(std::nanf("")).to_float()), "NaN stays NaN");
  CHECK(std::isnan(tutti::Float16{0x7e00}.to_float()), "float16 NaN bits are NaN");
}

void bfloat16() {
  CHECK(tutti::BFloat16::from_float(1.0f).bits == 0x3f80, "bfloat16 of 1");
  CHECK(tutti::BFloat16::from_float(-2.5f).bits == 0xc020, "bfloat16 of -2.5");
  CHECK(tutti::BFloat16::from_float(0.1f).bits == 0x3dcd, "bfloat16 of 0.1 rounds up");
  CHECK(tutti::BFloat16{0x3dcd}.to_float() == 0.10009765625f, "float of bfloat16 0x3dcd");
  CHECK(tutti::BFloat16::from_float(1.0f + 1.0f / 256).bits == 0x3f80, "1 + 2^-8 rounds down to even");
  CHECK(tutti::BFloat16::from_float(1.0f + 3.0f / 256).bits == 0x3f82, "1 + 3 * 2^-8 rounds up to even");
  CHECK(std::isnan(tutti::BFloat16::from_float(std::nanf("")).to_float()), "NaN stays NaN");
}

void float8() {
  CHECK(std::string(tutti::dtype_name(TUTTI_DTYPE_FLOAT8_E4M3)) == "float8_e4m3", "dtype_name e4m3");
  CHECK(std::string(tutti::dtype_name(TUTTI_DTYPE_FLOAT8_E5M2)) == "float8_e5m2", "dtype_name e5m2");
  std::vector<tutti::Float8E4m3> v(3);
  Buffer b = v;
  CHECK(b.size() == 3 && b.dtype() == TUTTI_DTYPE_FLOAT8_E4M3, "a vector of Float8E4m3's view");
  CHECK(tutti::Float8E4m3::from_float(1.0f).bits == 0x38, "e4m3 of 1");
  CHECK(tutti::Float8E4m3::from_float(-448.0f).bits == 0xfe, "e4m3 of -448");
  CHECK(tutti::Float8E4m3::from_float(1000.0f).bits == 0x7e, "e4m3 saturates at 448");
  CHECK(tutti::Float8E4m3::from_float(1.0f + 1.0f / 16).bits == 0x38, "1 + 2^-4 rounds down to even");
  CHECK(tutti::Float8E4m3::from_float(1.0f + 3.0f / 16).bits == 0x3a, "1 + 3 * 2^-4 rounds up to even");
  CHECK(tutti::Float8E4m3{0x01}.to_float() == 1.0f / 512, "the smallest e4m3 subnormal");
  CHECK(std::isnan(tutti::Float8E4m3{0x7f}.to_float()), "e4m3 NaN bits are NaN");
  CHECK(tutti::Float8E5m2::from_float(1.0f).bits == 0x3c, "e5m2 of 1");
  CHECK(tutti::Float8E5m2::from_float(-1e6f).bits == 0xfb, "e5m2 saturates at -57344");
  CHECK(tutti::Float8E5m2{0x7c}.to_float() == std::numeric_limits<float>::infinity(), "e5m2 inf bits are inf");
  CHECK(std::isnan(tutti::Float8E5m2::from_float(std::nanf("")).to_float()), "NaN stays NaN");
}

}  // namespace

int main() {
  try {
    views();
    float16();
    bfloat16();
    float8();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_buffer: FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("test_buffer: ok\n");
  return 0;
}
