#include "bindings/lua/element.h"

#include <cstring>

#include "tutti_float16.h"
#include "tutti_float8.h"

namespace tutti::lua {
namespace {

template <typename T>
T read_as(const char* element) {
  T value;
  std::memcpy(&value, element, sizeof value);
  return value;
}

template <typename T>
void write_as(char* element, T value) {
  std::memcpy(element, &value, sizeof value);
}

}  // namespace

size_t element_size(tutti_dtype dtype) {
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

bool is_float(tutti_dtype dtype) {
  return dtype == TUTTI_DTYPE_FLOAT16 || dtype == TUTTI_DTYPE_BFLOAT16 || dtype == TUTTI_DTYPE_FLOAT32 ||
         dtype == TUTTI_DTYPE_FLOAT64 || dtype == TUTTI_DTYPE_FLOAT8_E4M3 || dtype == TUTTI_DTYPE_FLOAT8_E5M2;
}

int64_t load_integer(tutti_dtype dtype, const char* element) {
  switch (dtype) {
    case TUTTI_DTYPE_INT8: return read_as<int8_t>(element);
    case TUTTI_DTYPE_UINT8: return read_as<uint8_t>(element);
    case TUTTI_DTYPE_INT32: return read_as<int32_t>(element);
    case TUTTI_DTYPE_INT64: return read_as<int64_t>(element);
    default: return static_cast<int64_t>(load_double(dtype, element));
  }
}

double load_double(tutti_dtype dtype, const char* element) {
  switch (dtype) {
    case TUTTI_DTYPE_FLOAT16: return tutti_float16_to_double(read_as<uint16_t>(element));
    case TUTTI_DTYPE_BFLOAT16: return tutti_bfloat16_to_double(read_as<uint16_t>(element));
    case TUTTI_DTYPE_FLOAT32: return read_as<float>(element);
    case TUTTI_DTYPE_FLOAT64: return read_as<double>(element);
    case TUTTI_DTYPE_FLOAT8_E4M3: return tutti_float8_e4m3_to_double(read_as<uint8_t>(element));
    case TUTTI_DTYPE_FLOAT8_E5M2: return tutti_float8_e5m2_to_double(read_as<uint8_t>(element));
    default: return static_cast<double>(load_integer(dtype, element));
  }
}

void store_integer(tutti_dtype dtype, char* element, int64_t value) {
  // Through uint64_t: the narrowing keeps the low bits, which C++20 defines as the wrap.
  const auto bits = static_cast<uint64_t>(value);
  switch (dtype) {
    case TUTTI_DTYPE_INT8: write_as(element, static_cast<int8_t>(bits)); return;
    case TUTTI_DTYPE_UINT8: write_as(element, static_cast<uint8_t>(bits)); return;
    case TUTTI_DTYPE_INT32: write_as(element, static_cast<int32_t>(bits)); return;
    case TUTTI_DTYPE_INT64: write_as(element, value); return;
    default: store_double(dtype, element, static_cast<double>(value)); return;
  }
}

void store_double(tutti_dtype dtype, char* element, double value) {
  switch (dtype) {
    case TUTTI_DTYPE_FLOAT16: write_as(element, tutti_float16_from_double(value)); return;
    case TUTTI_DTYPE_BFLOAT16: write_as(element, tutti_bfloat16_from_double(value)); return;
    case TUTTI_DTYPE_FLOAT32: write_as(element, static_cast<float>(value)); return;
    case TUTTI_DTYPE_FLOAT64: write_as(element, value); return;
    case TUTTI_DTYPE_FLOAT8_E4M3: write_as(element, tutti_float8_e4m3_from_double(value)); return;
    case TUTTI_DTYPE_FLOAT8_E5M2: write_as(element, tutti_float8_e5m2_from_double(value)); return;
    default: store_integer(dtype, element, static_cast<int64_t>(value)); return;
  }
}

bool double_fits_integer(double value) {
  // [-2^63, 2^63): both bounds are exact doubles.
  return value >= -9223372036854775808.0 && value < 9223372036854775808.0;
}

}  // namespace tutti::lua
