// tutti.cuda_tensor: a tensor whose elements live in CUDA device memory, made by
// tutti.zeros({11, 11}, {device = "cuda"}) (any constructor takes that last option
// table) or t:cuda(). It has tutti.tensor's header (shape, dtype; data is a device
// pointer) over a storage of its own, freed with cudaFree. It offers what a device
// buffer can: the collectives and sends and receives of one tensor (all_reduce,
// reduce, broadcast, send, recv, isend, irecv), a copy to the host (t:cpu(),
// t:to("cpu")), printing and t:show() through a host copy, shape, dtype and numel.
// Everything else takes a tutti.tensor, and a cuda_tensor given there is refused by
// its type name rather than read through a device pointer.
#pragma once

#include <lua.hpp>

#include "bindings/lua/tensor.h"
#include "tutti.h"

namespace tutti::lua {

inline constexpr const char* kCudaTensorType = "tutti.cuda_tensor";

// The device tensor at index, or nullptr when it is something else.
Tensor* to_cuda_tensor(lua_State* L, int index);
// Pushes a device copy of the host tensor at index (raises "CUDA is not available:
// ..." where it is not).
Tensor* push_cuda_copy(lua_State* L, int index);
// Pushes a host copy of the device tensor at index.
Tensor* push_host_copy(lua_State* L, int index);
// The tensor at arg for a collective: a tutti.tensor, or a tutti.cuda_tensor, in which
// case comm is told to look for device pointers (it may predate CUDA in the process).
Tensor* check_buffer(lua_State* L, int arg, tutti_comm* comm);
// Removes a last-argument option table {device = "cpu" | "cuda"} (a table with a
// device field, after at least one other argument) from the stack; returns whether it
// asked for "cuda".
bool take_device_option(lua_State* L);

// Creates the tutti.cuda_tensor metatable and its storage's.
void open_cuda_tensor(lua_State* L);

}  // namespace tutti::lua
