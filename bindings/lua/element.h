// One element of a tensor in each of tutti.h's eight dtypes: its size, and reading and
// writing it as a 64-bit integer or a double. Plain C++ without Lua, so that the
// conversions (16-bit floats above all) can be reasoned about on their own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tutti.h"

namespace tutti::lua {

size_t element_size(tutti_dtype dtype);
bool is_float(tutti_dtype dtype);

// Integer dtypes read exactly; float dtypes read through a double.
int64_t load_integer(tutti_dtype dtype, const char* element);
double load_double(tutti_dtype dtype, const char* element);

// Integer dtypes keep the low bits of value (two's complement wrap, as the collectives'
// kernels do); float dtypes round it to nearest.
void store_integer(tutti_dtype dtype, char* element, int64_t value);
// Float dtypes round value to nearest even (16-bit floats directly from the double, so
// there is no double rounding); integer dtypes must be given a value that
// double_fits_integer accepts, which is truncated toward zero and then wrapped.
void store_double(tutti_dtype dtype, char* element, double value);

// Whether value can be truncated to an int64_t (finite and in range).
bool double_fits_integer(double value);

}  // namespace tutti::lua
