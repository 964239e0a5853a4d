// tostring(t), in Torch7's layout: the values as a right-aligned grid, one matrix row per
// line (a 1-D tensor on one line; higher dimensions as a series of matrices, each under
// "(i,j,.,.) ="), then a line naming the type, dtype and shape:
//     0  0  1
//     0  1  1
//   [tutti.tensor float32 of size 2x3]
// Values that are all whole numbers print without decimals, so an 11x11 picture of
// small integers stays 33 columns wide. Beyond kMaxShown elements only the last line is
// printed, so that a stray print of a large tensor does not flood the terminal.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "bindings/lua/args.h"
#include "bindings/lua/tensor.h"

namespace tutti::lua {
namespace {

constexpr int64_t kMaxShown = 1000;

bool all_whole(const Tensor& t) {
  if (!is_float(t.dtype)) return true;
  for (int64_t i = 0; i < t.numel; ++i) {
    double value = load_double(t.dtype, t.element(i));
    if (std::isfinite(value) && (value != std::floor(value) || std::fabs(value) >= 1e15)) return false;
  }
  return true;
}

// The text of one element; returns its length.
int format_element(const Tensor& t, int64_t i, bool whole, char* out, size_t size) {
  if (!is_float(t.dtype))
    return std::snprintf(out, size, "%lld", static_cast<long long>(load_integer(t.dtype, t.element(i))));
  double value = load_double(t.dtype, t.element(i));
  if (std::isnan(value)) return std::snprintf(out, size, "nan");
  if (std::isinf(value)) return std::snprintf(out, size, value > 0 ? "inf" : "-inf");
  if (whole) return std::snprintf(out, size, "%.0f", value);
  return std::snprintf(out, size, "%.4g", value);
}

int tensor_tostring(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  luaL_Buffer buffer;
  luaL_buffinit(L, &buffer);
  char text[48];
  if (t->numel > 0 && t->numel <= kMaxShown) {
    bool whole = all_whole(*t);
    int width = 0;
    for (int64_t i = 0; i < t->numel; ++i) {
      int length = format_element(*t, i, whole, text, sizeof text);
      if (length > width) width = length;
    }
    int64_t columns = t->ndim == 0 ? 1 : t->shape()[t->ndim - 1];
    int64_t rows_per_matrix = t->ndim <= 1 ? 1 : t->shape()[t->ndim - 2];
    for (int64_t i = 0; i < t->numel; ++i) {
      if (t->ndim > 2 && i % (rows_per_matrix * columns) == 0) {
        // "(i,j,.,.) =" naming the matrix that starts here, 1-based.
        if (i > 0) luaL_addchar(&buffer, '\n');
        luaL_addchar(&buffer, '(');
        int64_t rest = i / (rows_per_matrix * columns);
        int64_t indices[kMaxDims];
        for (int d = t->ndim - 3; d >= 0; --d) {
          indices[d] = rest % t->shape()[d] + 1;
          rest /= t->shape()[d];
        }
        for (int d = 0; d < t->ndim - 2; ++d) {
          lua_pushfstring(L, "%I,", static_cast<lua_Integer>(indices[d]));
          luaL_addvalue(&buffer);
        }
        luaL_addstring(&buffer, ".,.) =\n");
      }
      int length = format_element(*t, i, whole, text, sizeof text);
      for (int pad = length; pad < width + 2; ++pad) luaL_addchar(&buffer, ' ');
      luaL_addlstring(&buffer, text, static_cast<size_t>(length));
      if ((i + 1) % columns == 0) luaL_addchar(&buffer, '\n');
    }
  }
  luaL_addstring(&buffer, "[tutti.tensor ");
  luaL_addstring(&buffer, dtype_name(t->dtype));
  if (t->ndim == 0) {
    luaL_addstring(&buffer, " scalar");
  } else {
    luaL_addstring(&buffer, " of size ");
    push_shape_text(L, *t);
    luaL_addvalue(&buffer);
  }
  if (t->numel > kMaxShown) {
    lua_pushfstring(L, "; %I values not shown: index it or call t:totable()", static_cast<lua_Integer>(t->numel));
    luaL_addvalue(&buffer);
  }
  luaL_addchar(&buffer, ']');
  luaL_pushresult(&buffer);
  return 1;
}

}  // namespace

extern const luaL_Reg kTensorFormat[] = {
    {"__tostring", tensor_tostring},
    {nullptr, nullptr},
};

}  // namespace tutti::lua
