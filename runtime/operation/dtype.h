// Element types and reduction operators of collective buffers. The values mirror
// tutti_dtype and tutti_op in tutti.h (capi/ static_asserts it), so that no runtime
// file needs the C header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti {

enum class Dtype : int32_t {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kBfloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kFloat8E4m3 = 8,
  kFloat8E5m2 = 9,
};
constexpr int32_t kDtypeCount = 10;

enum class ReduceOp : int32_t {
  kSum = 0,
  kProd = 1,
  kMin = 2,
  kMax = 3,
  kAvg = 4,
};
constexpr int32_t kReduceOpCount = 5;

constexpr bool valid_dtype(int32_t value) { return value >= 0 && value < kDtypeCount; }
constexpr bool valid_reduce_op(int32_t value) { return value >= 0 && value < kReduceOpCount; }

constexpr size_t dtype_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::kInt8:
    case Dtype::kUint8:
    case Dtype::kFloat8E4m3:
    case Dtype::kFloat8E5m2: return 1;
    case Dtype::kFloat16:
    case Dtype::kBfloat16: return 2;
    case Dtype::kInt32:
    case Dtype::kFloat32: return 4;
    case Dtype::kInt64:
    case Dtype::kFloat64: return 8;
  }
  return 0;
}

// "float32", "sum": the names messages and the benchmark use. The tables live at
// namespace scope: a table local to a constexpr function is rebuilt on the stack at
// every call, which the per-call fast path pays for.
inline constexpr const char* kDtypeNames[] = {"int8",     "uint8",   "int32",   "int64",       "float16",
                                              "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2"};
inline constexpr const char* kReduceOpNames[] = {"sum", "prod", "min", "max", "avg"};
constexpr const char* dtype_name(Dtype dtype) {
  return valid_dtype(static_cast<int32_t>(dtype)) ? kDtypeNames[static_cast<int32_t>(dtype)] : "unknown";
}
constexpr const char* reduce_op_name(ReduceOp op) {
  return valid_reduce_op(static_cast<int32_t>(op)) ? kReduceOpNames[static_cast<int32_t>(op)] : "unknown";
}

}  // namespace tutti
