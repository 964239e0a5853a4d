// The tensor constructors of the module: tutti.zeros{11, 11}, tutti.zeros(11, 11, "int32"),
// tutti.ones, tutti.full({11, 11}, 7), tutti.tensor{{1, 2}, {3, 4}}, tutti.arange(5).
// The dtype is always the last, optional argument, float32 when absent, as in torch;
// after it, an option table {device = "cuda"} makes the tensor on the GPU (a
// tutti.cuda_tensor, cuda_tensor.h).
#include <cmath>

#include "bindings/lua/args.h"
#include "bindings/lua/cuda_tensor.h"
#include "bindings/lua/tensor.h"

namespace tutti::lua {
namespace {

int make_filled(lua_State* L, int value_arg_or_zero, lua_Integer constant) {
  int64_t shape[kMaxDims];
  int next = 0;
  int32_t ndim = check_shape(L, 1, shape, &next);
  Number n{true, constant, 0};
  if (value_arg_or_zero != 0) n = check_number(L, next++, "value");
  Tensor* t = push_tensor(L, opt_dtype(L, next, TUTTI_DTYPE_FLOAT32), ndim, shape);
  for (int64_t i = 0; i < t->numel; ++i) store_number(L, n, t->dtype, t->element(i));
  return 1;
}

int tensor_zeros(lua_State* L) { return make_filled(L, 0, 0); }
int tensor_ones(lua_State* L) { return make_filled(L, 0, 1); }

int tensor_full(lua_State* L) {
  // Sizes given as numbers would swallow the value: full takes its shape as a table.
  if (lua_type(L, 1) != LUA_TTABLE) arg_expected(L, 1, "shape", "a table of sizes such as {11, 11}, then the value");
  return make_filled(L, 1, 0);
}

// Writes "data[2][3]" for the element at the first `depth` indices, for messages.
const char* push_path(lua_State* L, const int64_t* indices, int depth) {
  luaL_Buffer buffer;
  luaL_buffinit(L, &buffer);
  luaL_addstring(&buffer, "data");
  for (int d = 0; d < depth; ++d) {
    lua_pushfstring(L, "[%I]", static_cast<lua_Integer>(indices[d]));
    luaL_addvalue(&buffer);
  }
  luaL_pushresult(&buffer);
  return lua_tostring(L, -1);
}

// Stores the nested table at `table` (dimension `dim`) into t from *next_element on,
// checking that every level has the length the first entries announced.
void fill_from_table(lua_State* L, int table, Tensor* t, int dim, int64_t* indices, int64_t* next_element) {
  int64_t length = static_cast<int64_t>(lua_rawlen(L, table));
  if (length != t->shape()[dim]) {
    lua_pushfstring(L, "data: %s has %I entries; expected %I, as the first entries at that level have",
                    push_path(L, indices, dim), static_cast<lua_Integer>(length),
                    static_cast<lua_Integer>(t->shape()[dim]));
    luaL_argerror(L, 1, lua_tostring(L, -1));
  }
  luaL_checkstack(L, 3, "tensor: data nested too deeply");
  for (int64_t i = 1; i <= length; ++i) {
    indices[dim] = i;
    int type = lua_rawgeti(L, table, i);
    bool leaf = dim + 1 == t->ndim;
    if (leaf && type == LUA_TNUMBER) {
      store_number(L, check_number(L, -1, "data"), t->dtype, t->element((*next_element)++));
    } else if (!leaf && type == LUA_TTABLE) {
      fill_from_table(L, lua_gettop(L), t, dim + 1, indices, next_element);
    } else {
      lua_pushfstring(L, "data: %s is a %s; expected a %s", push_path(L, indices, dim + 1), luaL_typename(L, -1),
                      leaf ? "number" : "table (a row of the same depth as the others)");
      luaL_argerror(L, 1, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
  }
}

// tutti.tensor(data [, dtype]): data is a number (a 0-d tensor) or nested tables of
// numbers, one level per dimension, the shape read from the first entry of each level.
int tensor_from_data(lua_State* L) {
  tutti_dtype dtype = opt_dtype(L, 2, TUTTI_DTYPE_FLOAT32);
  if (lua_type(L, 1) == LUA_TNUMBER) {
    Tensor* t = push_tensor(L, dtype, 0, nullptr);
    store_number(L, check_number(L, 1, "data"), dtype, t->data);
    return 1;
  }
  if (lua_type(L, 1) != LUA_TTABLE) arg_expected(L, 1, "data", "a number or nested tables of numbers");
  int64_t shape[kMaxDims];
  int32_t ndim = 0;
  lua_pushvalue(L, 1);
  while (lua_type(L, -1) == LUA_TTABLE) {
    if (ndim == kMaxDims) luaL_argerror(L, 1, "data: nested more than 32 levels deep");
    shape[ndim++] = static_cast<int64_t>(lua_rawlen(L, -1));
    if (shape[ndim - 1] == 0) break;
    lua_rawgeti(L, -1, 1);
  }
  lua_settop(L, 2);
  Tensor* t = push_tensor(L, dtype, ndim, shape);
  int64_t indices[kMaxDims];
  int64_t next_element = 0;
  fill_from_table(L, 1, t, 0, indices, &next_element);
  return 1;
}

// tutti.arange([start,] stop [, step] [, dtype]): start, start + step, ... up to but
// excluding stop, as torch.arange (so arange(3) is 0, 1, 2, not Lua's 1-based 1, 2, 3).
int tensor_arange(lua_State* L) {
  int numbers = 0;
  while (numbers < 3 && lua_type(L, numbers + 1) == LUA_TNUMBER) ++numbers;
  if (numbers == 0) arg_expected(L, 1, "stop", "a number");
  tutti_dtype dtype = opt_dtype(L, numbers + 1, TUTTI_DTYPE_FLOAT32);
  Number start{true, 0, 0}, step{true, 1, 0};
  if (numbers >= 2) start = check_number(L, 1, "start");
  Number stop = check_number(L, numbers >= 2 ? 2 : 1, "stop");
  if (numbers == 3) step = check_number(L, 3, "step");
  auto real = [](const Number& n) { return n.is_integer ? static_cast<double>(n.integer) : n.real; };
  if (real(step) == 0 || std::isnan(real(step))) luaL_argerror(L, 3, "step: must be a number other than 0");
  double count = std::ceil((real(stop) - real(start)) / real(step));
  if (!(count < 1e15)) luaL_error(L, "arange: %f elements is too many", count);
  int64_t shape[1] = {count > 0 ? static_cast<int64_t>(count) : 0};
  Tensor* t = push_tensor(L, dtype, 1, shape);
  bool integral = start.is_integer && step.is_integer;
  for (int64_t i = 0; i < shape[0]; ++i) {
    Number value{integral, 0, 0};
    if (integral) {
      value.integer = start.integer + i * step.integer;
    } else {
      value.real = real(start) + static_cast<double>(i) * real(step);
    }
    store_number(L, value, dtype, t->element(i));
  }
  return 1;
}

// A constructor taking the {device = ...} option: made on the host, then copied.
template <lua_CFunction make>
int with_device(lua_State* L) {
  bool cuda = take_device_option(L);
  make(L);
  if (cuda) push_cuda_copy(L, -1);
  return 1;
}

}  // namespace

extern const luaL_Reg kTensorCreate[] = {
    {"zeros", with_device<tensor_zeros>},   {"ones", with_device<tensor_ones>},
    {"full", with_device<tensor_full>},     {"tensor", with_device<tensor_from_data>},
    {"arange", with_device<tensor_arange>}, {nullptr, nullptr},
};

}  // namespace tutti::lua
