// Elementwise arithmetic (+ - * / and unary -), equality, and the reductions sum, max
// and min, enough for the tutorials. A number is broadcast against a tensor; two
// tensors must have the same shape. Result dtypes follow torch's promotion, without
// int16: the wider of two integer or two float dtypes (int8 with uint8 gives int32,
// float16 with bfloat16, or float8_e4m3 with float8_e5m2, float32), a float dtype over
// an integer one, an integer tensor with a non-integer number gives float32, and /
// always gives a float.
//
// t == u is true when both are tensors of the same shape whose elements are equal as
// numbers (whatever their dtypes), so tests can write assert(t == expected); Lua's ==
// yields one boolean, so an elementwise comparison cannot be spelt with it. Use
// rawequal(t, u) to ask whether they are the same object.
#include <cmath>

#include "bindings/lua/args.h"
#include "bindings/lua/tensor.h"

namespace tutti::lua {
namespace {

enum class Op { kAdd, kSub, kMul, kDiv };

const char* op_verb(Op op) {
  switch (op) {
    case Op::kAdd: return "add";
    case Op::kSub: return "subtract";
    case Op::kMul: return "multiply";
    case Op::kDiv: return "divide";
  }
  return "?";
}

tutti_dtype promote(tutti_dtype a, tutti_dtype b) {
  if (a == b) return a;
  if (is_float(a) != is_float(b)) return is_float(a) ? a : b;
  if (element_size(a) != element_size(b)) return element_size(a) > element_size(b) ? a : b;
  // Same width, different kind: int8/uint8, float16/bfloat16 or the two fp8s; neither
  // holds the other.
  return is_float(a) ? TUTTI_DTYPE_FLOAT32 : TUTTI_DTYPE_INT32;
}

// One operand: a tensor, or a number broadcast to every element.
struct Operand {
  Tensor* tensor;
  Number number;

  int64_t integer(int64_t i) const {
    if (tensor) return load_integer(tensor->dtype, tensor->element(i));
    return number.is_integer ? number.integer : static_cast<int64_t>(number.real);
  }
  double real(int64_t i) const {
    if (tensor) return load_double(tensor->dtype, tensor->element(i));
    return number.is_integer ? static_cast<double>(number.integer) : number.real;
  }
};

Operand check_operand(lua_State* L, int index, Op op) {
  Operand operand{to_tensor(L, index), {}};
  if (operand.tensor) return operand;
  if (lua_type(L, index) != LUA_TNUMBER) {
    luaL_error(L, "cannot %s a tutti.tensor and a %s; use a tensor or a number", op_verb(op), luaL_typename(L, index));
  }
  operand.number = check_number(L, index, "operand");
  return operand;
}

tutti_dtype result_dtype(const Operand& a, const Operand& b, Op op) {
  tutti_dtype dtype;
  if (a.tensor && b.tensor) {
    dtype = promote(a.tensor->dtype, b.tensor->dtype);
  } else {
    const Operand& t = a.tensor ? a : b;
    const Operand& n = a.tensor ? b : a;
    dtype = !is_float(t.tensor->dtype) && !n.number.is_integer ? TUTTI_DTYPE_FLOAT32 : t.tensor->dtype;
  }
  if (op == Op::kDiv && !is_float(dtype)) dtype = TUTTI_DTYPE_FLOAT32;
  return dtype;
}

// Integers wrap in int64 as in the dtype they are stored to: through uint64_t, where
// overflow is defined.
int64_t apply_integer(Op op, int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Op::kAdd: return static_cast<int64_t>(ua + ub);
    case Op::kSub: return static_cast<int64_t>(ua - ub);
    case Op::kMul: return static_cast<int64_t>(ua * ub);
    case Op::kDiv: break;  // always float: result_dtype
  }
  return 0;
}

double apply_real(Op op, double a, double b) {
  switch (op) {
    case Op::kAdd: return a + b;
    case Op::kSub: return a - b;
    case Op::kMul: return a * b;
    case Op::kDiv: return a / b;
  }
  return 0;
}

int arithmetic(lua_State* L, Op op) {
  Operand a = check_operand(L, 1, op), b = check_operand(L, 2, op);
  if (a.tensor && b.tensor && !same_shape(*a.tensor, *b.tensor)) {
    const char* left = push_shape_text(L, *a.tensor);
    const char* right = push_shape_text(L, *b.tensor);
    return luaL_error(L, "cannot %s tensors of shapes %s and %s; shapes must be equal (only a number is broadcast)",
                      op_verb(op), left, right);
  }
  const Tensor& shaped = a.tensor ? *a.tensor : *b.tensor;
  Tensor* result = push_tensor(L, result_dtype(a, b, op), shaped.ndim, shaped.shape());
  if (is_float(result->dtype)) {
    for (int64_t i = 0; i < result->numel; ++i) {
      store_double(result->dtype, result->element(i), apply_real(op, a.real(i), b.real(i)));
    }
  } else {
    for (int64_t i = 0; i < result->numel; ++i) {
      store_integer(result->dtype, result->element(i), apply_integer(op, a.integer(i), b.integer(i)));
    }
  }
  return 1;
}

int tensor_add(lua_State* L) { return arithmetic(L, Op::kAdd); }
int tensor_sub(lua_State* L) { return arithmetic(L, Op::kSub); }
int tensor_mul(lua_State* L) { return arithmetic(L, Op::kMul); }
int tensor_div(lua_State* L) { return arithmetic(L, Op::kDiv); }

int tensor_unm(lua_State* L) {
  lua_settop(L, 1);
  lua_pushinteger(L, -1);
  return arithmetic(L, Op::kMul);
}

int tensor_eq(lua_State* L) {
  Tensor* a = to_tensor(L, 1);
  Tensor* b = to_tensor(L, 2);
  bool equal = a && b && same_shape(*a, *b);
  bool integers = equal && !is_float(a->dtype) && !is_float(b->dtype);
  for (int64_t i = 0; equal && i < a->numel; ++i) {
    equal = integers ? load_integer(a->dtype, a->element(i)) == load_integer(b->dtype, b->element(i))
                     : load_double(a->dtype, a->element(i)) == load_double(b->dtype, b->element(i));
  }
  lua_pushboolean(L, equal);
  return 1;
}

// sum: integers add up in int64 (wrapping), floats in double.
int tensor_sum(lua_State* L) {
  Tensor* t = check_tensor(L, 1);
  if (is_float(t->dtype)) {
    double sum = 0;
    for (int64_t i = 0; i < t->numel; ++i) sum += load_double(t->dtype, t->element(i));
    lua_pushnumber(L, sum);
  } else {
    uint64_t sum = 0;
    for (int64_t i = 0; i < t->numel; ++i) sum += static_cast<uint64_t>(load_integer(t->dtype, t->element(i)));
    lua_pushinteger(L, static_cast<lua_Integer>(sum));
  }
  return 1;
}

// max and min: NaN wins, as in torch; an empty tensor has neither.
int extreme(lua_State* L, bool want_max) {
  Tensor* t = check_tensor(L, 1);
  if (t->numel == 0) {
    return luaL_error(L, "%s: the tensor is empty (%s); there is no %s", want_max ? "max" : "min",
                      push_shape_text(L, *t), want_max ? "maximum" : "minimum");
  }
  if (is_float(t->dtype)) {
    double best = load_double(t->dtype, t->data);
    for (int64_t i = 1; i < t->numel && !std::isnan(best); ++i) {
      double value = load_double(t->dtype, t->element(i));
      if (std::isnan(value) || (want_max ? value > best : value < best)) best = value;
    }
    lua_pushnumber(L, best);
  } else {
    int64_t best = load_integer(t->dtype, t->data);
    for (int64_t i = 1; i < t->numel; ++i) {
      int64_t value = load_integer(t->dtype, t->element(i));
      if (want_max ? value > best : value < best) best = value;
    }
    lua_pushinteger(L, best);
  }
  return 1;
}

int tensor_max(lua_State* L) { return extreme(L, true); }
int tensor_min(lua_State* L) { return extreme(L, false); }

}  // namespace

extern const luaL_Reg kTensorMath[] = {
    {"__add", tensor_add}, {"__sub", tensor_sub}, {"__mul", tensor_mul}, {"__div", tensor_div}, {"__unm", tensor_unm},
    {"__eq", tensor_eq},   {"sum", tensor_sum},   {"max", tensor_max},   {"min", tensor_min},   {nullptr, nullptr},
};

}  // namespace tutti::lua
