// tutti.tensor: a shape and a dtype over row-major contiguous storage, which views
// share. The userdata holds the header below followed by the shape; its user value is
// the storage (a userdata of raw bytes, or of memory from tutti_mem_alloc:
// shared_memory.h), so a view keeps its storage alive.
#pragma once

#include <lua.hpp>

#include <cstddef>
#include <cstdint>

#include "bindings/lua/element.h"
#include "tutti.h"

namespace tutti::lua {

inline constexpr const char* kTensorType = "tutti.tensor";
// As many dimensions as NumPy allows; more is almost certainly a mistake.
inline constexpr int kMaxDims = 32;

struct Tensor {
  char* data;  // the first element, inside the storage
  int64_t numel;
  tutti_dtype dtype;
  int32_t ndim;

  int64_t* shape() { return reinterpret_cast<int64_t*>(this + 1); }
  const int64_t* shape() const { return reinterpret_cast<const int64_t*>(this + 1); }
  size_t element_bytes() const { return element_size(dtype); }
  size_t bytes() const { return static_cast<size_t>(numel) * element_bytes(); }
  char* element(int64_t index) const { return data + static_cast<size_t>(index) * element_bytes(); }
};

// The tensor at arg, or an argerror "tutti.tensor expected, got ...".
Tensor* check_tensor(lua_State* L, int arg);
// The tensor at index, or nullptr when it is something else.
Tensor* to_tensor(lua_State* L, int index);

// Pushes a new tensor with zeroed storage of its own. Raises when the shape is too
// large to allocate.
Tensor* push_tensor(lua_State* L, tutti_dtype dtype, int32_t ndim, const int64_t* shape);
// The bytes a tensor of dtype and shape holds. Raises when they are too many.
size_t tensor_bytes(lua_State* L, tutti_dtype dtype, int32_t ndim, const int64_t* shape);
// Pushes a tensor over `data`, which lies inside the storage at index `storage` (any
// value that keeps the memory alive; the tensor and its views hold it).
Tensor* push_tensor_over(lua_State* L, int storage, char* data, tutti_dtype dtype, int32_t ndim, const int64_t* shape);
// Pushes a view over `data`, which lies inside the storage of the tensor at `owner`.
Tensor* push_view(lua_State* L, int owner, char* data, int32_t ndim, const int64_t* shape);
// Pushes the storage of the tensor at index (for comparing two tensors' storage).
void push_storage(lua_State* L, int index);

// Reads a shape at arg: a table of sizes ({11, 11}; {} is 0-D) or sizes given as
// numbers (11, 11). Returns ndim and the index of the first argument after the shape.
int32_t check_shape(lua_State* L, int arg, int64_t* shape, int* next_arg);
// Pushes "11x11" ("scalar" for 0-D), for messages.
const char* push_shape_text(lua_State* L, const Tensor& tensor);
bool same_shape(const Tensor& a, const Tensor& b);

// A Lua number as given: integers stay exact, whatever the dtype they end up in.
struct Number {
  bool is_integer;
  lua_Integer integer;
  double real;
};
Number check_number(lua_State* L, int arg, const char* what);
// Stores n as an element of dtype (floats round, integers wrap); raises when a NaN,
// an infinity or a float out of int64 range is stored in an integer dtype.
void store_number(lua_State* L, const Number& n, tutti_dtype dtype, char* element);
// Pushes an element: an integer for integer dtypes, a float for float dtypes.
void push_element(lua_State* L, tutti_dtype dtype, const char* element);
// Copies src's values into dst (same numel), converting between dtypes as
// store_number does; the two may share storage.
void copy_values(lua_State* L, const Tensor& dst, const Tensor& src);

// Creates the "tutti.tensor" metatable and adds the tensor functions (constructors,
// drawing helpers) to the module table at index `module`.
void open_tensor(lua_State* L, int module);

// Function tables of the other tensor files, registered by open_tensor: entries named
// "__*" go to the metatable, the others become methods.
extern const luaL_Reg kTensorMath[];     // tensor_math.cc: + - * / unary -, ==, sum, max, min
extern const luaL_Reg kTensorFormat[];   // tensor_format.cc: __tostring
extern const luaL_Reg kTensorCreate[];   // tensor_create.cc: module functions zeros, ones, ...
extern const luaL_Reg kTensorDraw[];     // tensor_draw.cc: disk, square (module functions and methods)
extern const luaL_Reg kTensorPicture[];  // tensor_picture.cc: show, save_png
extern const luaL_Reg kTensorDevice[];   // cuda_tensor.cc: cuda, cpu, device

}  // namespace tutti::lua
