// CUDA device memory for the Lua module's tensors: allocate, free, copy. The CUDA
// runtime is opened at run time, as libtutti opens it, so that the module loads where
// there is no CUDA; bindings see only tutti.h (STYLE G2), hence this small table of
// its own rather than the runtime's.
#pragma once

#include <lua.hpp>

#include <cstddef>

namespace tutti::lua {

struct CudaMemory {
  int (*Malloc)(void** pointer, size_t bytes);
  int (*Free)(void* pointer);
  int (*Memcpy)(void* dst, const void* src, size_t bytes, int kind);
  int (*Memset)(void* pointer, int value, size_t bytes);
  const char* (*GetErrorString)(int error);

  // Raises "<what>: <CUDA's message>" unless error is 0 (cudaSuccess).
  void check(lua_State* L, int error, const char* what) const;
};

// cudaMemcpyKind's values.
inline constexpr int kHostToDevice = 1;
inline constexpr int kDeviceToHost = 2;

// The CUDA runtime with a usable device, or a Lua error "CUDA is not available: ...".
const CudaMemory& cuda_memory(lua_State* L);

}  // namespace tutti::lua
