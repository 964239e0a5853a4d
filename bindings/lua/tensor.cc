// tutti.tensor follows Lua Torch7's conventions where they fit, because Torch7 is what
// tensors looked like in Lua to the people who wrote Lua numerics, and because they
// agree with Lua itself: indices start at 1, t[i] of a tensor of two or more
// dimensions is a view of row i that shares storage (so t[i][j] = v writes through),
// t[i] of a 1-D tensor is a number, t[{i, j}] reads or writes one element, and methods
// that modify return the tensor so that calls chain (t:fill(0):copy(u)). Where torch
// (PyTorch) is what the tutorials show, its names win: dtype names ("float32"), the
// default dtype float32, zeros/ones/full, numel, clone, to.
// Departures: #t is the size of the first dimension (Torch7 gave all sizes; this is
// what `for i = 1, #t` wants), and t == u compares shapes and values (tensor_math.cc).
#include "bindings/lua/tensor.h"

#include "bindings/lua/cuda_tensor.h"

#include <cmath>
#include <cstring>

#include "bindings/lua/args.h"

namespace tutti::lua {
namespace {

// The element or sub-tensor that an index selects, as a pointer and what remains of the
// shape (ndim 0: a single element).
struct Selection {
  char* data;
  int32_t ndim;
  const int64_t* shape;
};

// The index at key_index: an integer (one dimension) or a table of integers (one per
// leading dimension, 1-based).
Selection select(lua_State* L, Tensor* t, int key_index) {
  int64_t indices[kMaxDims];
  int count = 0;
  lua_Integer index = 0;
  if (lua_type(L, key_index) == LUA_TNUMBER) {
    if (!to_integer(L, key_index, &index)) {
      luaL_error(L, "tensor index %s is not an integer", luaL_tolstring(L, key_index, nullptr));
    }
    indices[0] = index;
    count = 1;
  } else if (lua_type(L, key_index) == LUA_TTABLE) {
    count = static_cast<int>(lua_rawlen(L, key_index));
    if (count > t->ndim) {
      luaL_error(L, "tensor index {...} has %d entries but the tensor has %d dimensions", count, int{t->ndim});
    }
    for (int d = 0; d < count; ++d) {
      lua_rawgeti(L, key_index, d + 1);
      if (!to_integer(L, -1, &index)) luaL_error(L, "tensor index {...}: entry %d is not an integer", d + 1);
      indices[d] = index;
      lua_pop(L, 1);
    }
  } else {
    luaL_error(L, "tensor index expected: an integer, a table of integers such as {2, 3}, or a method name; got %s",
               luaL_typename(L, key_index));
  }
  if (count > t->ndim) luaL_error(L, "cannot index a 0-d tensor with t[i]; use t:item()");
  size_t offset = 0;
  for (int d = 0; d < t->ndim; ++d) {
    if (d < count && (indices[d] < 1 || indices[d] > t->shape()[d])) {
      luaL_error(L, "index %I is out of range for dimension %d of size %I; tensor indices are 1-based",
                 static_cast<lua_Integer>(indices[d]), d + 1, static_cast<lua_Integer>(t->shape()[d]));
    }
    // Row-major: the stride of dimension d is the product of the sizes after it.
    offset = offset * static_cast<size_t>(t->shape()[d]) + (d < count ? static_cast<size_t>(indices[d] - 1) : 0);
  }
  return Selection{t->element(static_cast<int64_t>(offset)), t->ndim - count, t->shape() + count};
}

int tensor_index(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_rawget(L, lua_upvalueindex(1));  // the methods table; nil for other names
    return 1;
  }
  Selection s = select(L, t, 2);
  if (s.ndim == 0) {
    push_element(L, t->dtype, s.data);
  } else {
    push_view(L, 1, s.data, s.ndim, s.shape);
  }
  return 1;
}

int tensor_newindex(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    return luaL_error(L, "cannot set field '%s' of a tutti.tensor; index it with numbers", lua_tostring(L, 2));
  }
  Selection s = select(L, t, 2);
  if (Tensor* source = to_tensor(L, 3)) {
    // The selected part must be a tensor of the same number of elements, which it copies.
    push_view(L, 1, s.data, s.ndim, s.shape);
    copy_values(L, *to_tensor(L, -1), *source);
    return 0;
  }
  Number n = check_number(L, 3, "value");
  int64_t count = 1;
  for (int d = 0; d < s.ndim; ++d) count *= s.shape[d];
  for (int64_t i = 0; i < count; ++i)
    store_number(L, n, t->dtype, s.data + static_cast<size_t>(i) * t->element_bytes());
  return 0;
}

int tensor_len(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  if (t->ndim == 0) return luaL_error(L, "#t of a 0-d tensor has no meaning; use t:item() for its value");
  lua_pushinteger(L, t->shape()[0]);
  return 1;
}

int tensor_fill(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  Number n = check_number(L, 2, "value");
  if (t->numel > 0) {
    store_number(L, n, t->dtype, t->data);
    for (int64_t i = 1; i < t->numel; ++i) std::memcpy(t->element(i), t->data, t->element_bytes());
  }
  lua_settop(L, 1);
  return 1;
}

int tensor_copy(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  copy_values(L, *t, *check_tensor(L, 2));
  lua_settop(L, 1);
  return 1;
}

int tensor_clone(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  Tensor* copy = push_tensor(L, t->dtype, t->ndim, t->shape());
  std::memcpy(copy->data, t->data, t->bytes());
  return 1;
}

// A copy in another dtype; always a new tensor, even when the dtype is the same.
int tensor_to(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  // t:to("cuda") and t:to("cpu") move it, as torch's to(device) does.
  const char* device = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "";
  if (std::strcmp(device, "cuda") == 0) {
    push_cuda_copy(L, 1);
    return 1;
  }
  if (std::strcmp(device, "cpu") == 0) {
    lua_settop(L, 1);
    return 1;
  }
  tutti_dtype dtype = check_dtype(L, 2);
  copy_values(L, *push_tensor(L, dtype, t->ndim, t->shape()), *t);
  return 1;
}

// A view of the same storage with another shape of as many elements.
int tensor_view(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  int64_t shape[kMaxDims];
  int next = 0;
  int32_t ndim = check_shape(L, 2, shape, &next);
  // Checked: a product that wraps could match numel (zeros(0) as 2^32 x 2^32, or
  // zeros(1) as 3 x 11 x 0xf83e0f83e0f83e1), and indexing that view would reach far
  // outside the storage. No tensor holds more than int64 elements.
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (__builtin_mul_overflow(numel, shape[d], &numel)) {
      return luaL_error(L,
                        "view: a tensor of %I elements (%s) cannot be viewed with a shape whose sizes multiply "
                        "past int64 (at size %I in dimension %d); give sizes whose product is %I",
                        static_cast<lua_Integer>(t->numel), push_shape_text(L, *t), static_cast<lua_Integer>(shape[d]),
                        d + 1, static_cast<lua_Integer>(t->numel));
    }
  }
  if (numel != t->numel) {
    return luaL_error(L, "view: a tensor of %I elements (%s) cannot be viewed with a shape of %I elements",
                      static_cast<lua_Integer>(t->numel), push_shape_text(L, *t), static_cast<lua_Integer>(numel));
  }
  push_view(L, 1, t->data, ndim, shape);
  return 1;
}

int tensor_shape(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  lua_createtable(L, t->ndim, 0);
  for (int d = 0; d < t->ndim; ++d) {
    lua_pushinteger(L, t->shape()[d]);
    lua_rawseti(L, -2, d + 1);
  }
  return 1;
}

int tensor_dtype(lua_State* L) {
  lua_pushstring(L, dtype_name(check_tensor(L, 1)->dtype));
  return 1;
}

int tensor_numel(lua_State* L) {
  lua_pushinteger(L, check_tensor(L, 1)->numel);
  return 1;
}

int tensor_item(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  if (t->numel != 1) {
    return luaL_error(L, "item: the tensor has %I elements (%s); item() needs exactly one",
                      static_cast<lua_Integer>(t->numel), push_shape_text(L, *t));
  }
  push_element(L, t->dtype, t->data);
  return 1;
}

// Nested tables, one level per dimension; a 0-d tensor gives its number.
void push_table(lua_State* L, const Tensor& t, int dim, int64_t* next_element) {
  if (dim == t.ndim) {
    push_element(L, t.dtype, t.element((*next_element)++));
    return;
  }
  int64_t size = t.shape()[dim];
  luaL_checkstack(L, 2, "totable: too many dimensions");
  lua_createtable(L, static_cast<int>(size), 0);
  for (int64_t i = 1; i <= size; ++i) {
    push_table(L, t, dim + 1, next_element);
    lua_rawseti(L, -2, i);
  }
}

int tensor_totable(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  int64_t next_element = 0;
  push_table(L, *t, 0, &next_element);
  return 1;
}

// __index is set in open_tensor: it needs the methods table as an upvalue.
const luaL_Reg kTensorCore[] = {
    {"__newindex", tensor_newindex},
    {"__len", tensor_len},
    {"fill", tensor_fill},
    {"copy", tensor_copy},
    {"clone", tensor_clone},
    {"to", tensor_to},
    {"view", tensor_view},
    {"shape", tensor_shape},
    {"dtype", tensor_dtype},
    {"numel", tensor_numel},
    {"item", tensor_item},
    {"totable", tensor_totable},
    {nullptr, nullptr},
};

// Metamethods ("__*") go to the metatable at index -2, methods to the table at -1.
void register_entries(lua_State* L, const luaL_Reg* entries) {
  for (; entries->name != nullptr; ++entries) {
    lua_pushcfunction(L, entries->func);
    lua_setfield(L, std::strncmp(entries->name, "__", 2) == 0 ? -3 : -2, entries->name);
  }
}

}  // namespace

Tensor* check_tensor(lua_State* L, int arg) { return static_cast<Tensor*>(luaL_checkudata(L, arg, kTensorType)); }

Tensor* to_tensor(lua_State* L, int index) { return static_cast<Tensor*>(luaL_testudata(L, index, kTensorType)); }

size_t tensor_bytes(lua_State* L, tutti_dtype dtype, int32_t ndim, const int64_t* shape) {
  // Checked here, once, so that nothing downstream can overflow: numel * element size
  // fits in int64_t and size_t.
  uint64_t bytes = element_size(dtype);
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(shape[d]), &bytes) ||
        bytes > static_cast<uint64_t>(INT64_MAX)) {
      luaL_error(L, "cannot make a tensor of %d dimensions with size %I in dimension %d: too large", int{ndim},
                 static_cast<lua_Integer>(shape[d]), d + 1);
    }
  }
  return static_cast<size_t>(bytes);
}

Tensor* push_tensor_over(lua_State* L, int storage, char* data, tutti_dtype dtype, int32_t ndim, const int64_t* shape) {
  storage = lua_absindex(L, storage);
  auto* t = static_cast<Tensor*>(lua_newuserdatauv(L, sizeof(Tensor) + sizeof(int64_t) * ndim, 1));
  t->data = data;
  t->dtype = dtype;
  t->ndim = ndim;
  t->numel = 1;
  for (int d = 0; d < ndim; ++d) {
    t->shape()[d] = shape[d];
    t->numel *= shape[d];
  }
  lua_pushvalue(L, storage);
  lua_setiuservalue(L, -2, 1);
  luaL_setmetatable(L, kTensorType);
  return t;
}

Tensor* push_view(lua_State* L, int owner, char* data, int32_t ndim, const int64_t* shape) {
  owner = lua_absindex(L, owner);
  push_storage(L, owner);
  Tensor* t = push_tensor_over(L, -1, data, to_tensor(L, owner)->dtype, ndim, shape);
  lua_remove(L, -2);
  return t;
}

Tensor* push_tensor(lua_State* L, tutti_dtype dtype, int32_t ndim, const int64_t* shape) {
  const size_t bytes = tensor_bytes(L, dtype, ndim, shape);
  // Lua aligns userdata memory for any C type, which the widest dtype needs.
  auto* data = static_cast<char*>(lua_newuserdatauv(L, bytes, 0));
  std::memset(data, 0, bytes);
  Tensor* t = push_tensor_over(L, -1, data, dtype, ndim, shape);
  lua_remove(L, -2);
  return t;
}

void push_storage(lua_State* L, int index) { lua_getiuservalue(L, index, 1); }

int32_t check_shape(lua_State* L, int arg, int64_t* shape, int* next_arg) {
  const char* expected = "a table of sizes such as {11, 11}, or sizes as numbers";
  int32_t ndim = 0;
  auto too_many = [&](int arg_for_error) {
    if (ndim == kMaxDims) luaL_argerror(L, arg_for_error, "shape: more than 32 dimensions");
  };
  lua_Integer size = 0;
  if (lua_type(L, arg) == LUA_TTABLE) {
    lua_Integer length = static_cast<lua_Integer>(lua_rawlen(L, arg));
    for (lua_Integer i = 1; i <= length; ++i) {
      lua_rawgeti(L, arg, i);
      if (lua_type(L, -1) == LUA_TNUMBER && (!to_integer(L, -1, &size) || size < 0)) {
        lua_pushfstring(L, "shape: entry %I is %s; sizes are non-negative integers", i, luaL_tolstring(L, -1, nullptr));
        luaL_argerror(L, arg, lua_tostring(L, -1));
      }
      if (lua_type(L, -1) != LUA_TNUMBER) {
        lua_pushfstring(L, "shape: entry %I is a %s; sizes are non-negative integers", i, luaL_typename(L, -1));
        luaL_argerror(L, arg, lua_tostring(L, -1));
      }
      too_many(arg);
      shape[ndim++] = size;
      lua_pop(L, 1);
    }
    *next_arg = arg + 1;
    return ndim;
  }
  if (lua_type(L, arg) != LUA_TNUMBER) arg_expected(L, arg, "shape", expected);
  int index = arg;
  for (; lua_type(L, index) == LUA_TNUMBER; ++index) {
    if (!to_integer(L, index, &size) || size < 0) arg_expected(L, index, "shape", expected);
    too_many(index);
    shape[ndim++] = size;
  }
  *next_arg = index;
  return ndim;
}

const char* push_shape_text(lua_State* L, const Tensor& t) {
  if (t.ndim == 0) {
    lua_pushliteral(L, "scalar");
    return lua_tostring(L, -1);
  }
  luaL_Buffer buffer;
  luaL_buffinit(L, &buffer);
  for (int d = 0; d < t.ndim; ++d) {
    if (d > 0) luaL_addchar(&buffer, 'x');
    lua_pushinteger(L, t.shape()[d]);
    luaL_addvalue(&buffer);
  }
  luaL_pushresult(&buffer);
  return lua_tostring(L, -1);
}

bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape()[d] != b.shape()[d]) return false;
  }
  return true;
}

Number check_number(lua_State* L, int arg, const char* what) {
  if (lua_type(L, arg) != LUA_TNUMBER) arg_expected(L, arg, what, "a number");
  Number n{};
  n.is_integer = lua_isinteger(L, arg);
  if (n.is_integer) {
    n.integer = lua_tointeger(L, arg);
  } else {
    n.real = lua_tonumber(L, arg);
  }
  return n;
}

void store_number(lua_State* L, const Number& n, tutti_dtype dtype, char* element) {
  if (n.is_integer) {
    store_integer(dtype, element, n.integer);
  } else if (is_float(dtype) || double_fits_integer(n.real)) {
    store_double(dtype, element, n.real);
  } else {
    luaL_error(L, "cannot store %f in a tensor of %s: integer dtypes hold only finite values within int64's range",
               n.real, dtype_name(dtype));
  }
}

void push_element(lua_State* L, tutti_dtype dtype, const char* element) {
  if (is_float(dtype)) {
    lua_pushnumber(L, load_double(dtype, element));
  } else {
    lua_pushinteger(L, load_integer(dtype, element));
  }
}

void copy_values(lua_State* L, const Tensor& dst, const Tensor& src) {
  if (dst.numel != src.numel) {
    const char* to = push_shape_text(L, dst);
    const char* from = push_shape_text(L, src);
    luaL_error(L, "cannot copy a tensor of %I elements (%s) into one of %I elements (%s)",
               static_cast<lua_Integer>(src.numel), from, static_cast<lua_Integer>(dst.numel), to);
  }
  if (dst.dtype == src.dtype) {
    std::memmove(dst.data, src.data, dst.bytes());
    return;
  }
  for (int64_t i = 0; i < src.numel; ++i) {
    Number n{};
    n.is_integer = !is_float(src.dtype);
    if (n.is_integer) {
      n.integer = load_integer(src.dtype, src.element(i));
    } else {
      n.real = load_double(src.dtype, src.element(i));
    }
    store_number(L, n, dst.dtype, dst.element(i));
  }
}

void open_tensor(lua_State* L, int module) {
  module = lua_absindex(L, module);
  luaL_newmetatable(L, kTensorType);
  lua_newtable(L);  // methods
  register_entries(L, kTensorCore);
  register_entries(L, kTensorMath);
  register_entries(L, kTensorFormat);
  register_entries(L, kTensorDraw);
  register_entries(L, kTensorPicture);
  register_entries(L, kTensorDevice);
  lua_pushcclosure(L, tensor_index, 1);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushvalue(L, module);
  luaL_setfuncs(L, kTensorCreate, 0);
  // The drawing helpers are module functions as well, as the tutorial's disk(image, ...).
  luaL_setfuncs(L, kTensorDraw, 0);
  lua_pop(L, 1);
  open_cuda_tensor(L);
}

}  // namespace tutti::lua
