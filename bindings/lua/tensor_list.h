// The lists of tensors that all_gather, reduce_scatter, gather, scatter and all_to_all
// take, one tensor per rank, as torch.distributed does. The C API wants one buffer of
// size * count elements: a list whose tensors lie back to back in one storage (the rows
// of a matrix: {m[1], m[2], ...}) is used in place, any other goes through a buffer
// that the call fills from the list or copies into it.
#pragma once

#include <lua.hpp>

#include <cstddef>
#include <cstdint>

#include "tutti.h"

namespace tutti::lua {

struct TensorList {
  int snapshot;  // stack index of a table of the list's tensors, as they were at the call
  int length;
  size_t block_bytes;  // bytes of each tensor
  char* contiguous;    // the first tensor's data when they lie back to back, else nullptr

  size_t bytes() const { return block_bytes * static_cast<size_t>(length); }
};

// Checks the list at arg, named `what` in messages: a table of exactly `length`
// tensors of `numel` elements of `dtype` each. Pushes its snapshot.
TensorList check_list(lua_State* L, int arg, const char* what, int length, int64_t numel, tutti_dtype dtype);

// Pushes a new zeroed buffer of `bytes` and returns it.
char* push_buffer(lua_State* L, size_t bytes);
// Pushes a new buffer holding the list's tensors one after another, and returns it.
char* pack_list(lua_State* L, const TensorList& list);
// Copies block i of buffer into tensor i of the snapshot (a table of tensors) at index.
void unpack_list(lua_State* L, int snapshot, const char* buffer, size_t block_bytes);

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlaps(const char* a, size_t a_bytes, const char* b, size_t b_bytes);

}  // namespace tutti::lua
