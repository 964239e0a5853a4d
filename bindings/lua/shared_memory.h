// comm:mem_alloc(shape [, dtype]) and tutti.mem_alloc on the world: a tensor of zeros
// over memory from tutti_mem_alloc, which every rank of the communicator on this node
// maps, so that large collectives of it read (and write) the other ranks' tensors in
// place. Collective, like tutti_mem_alloc: every rank, the same shape and dtype.
//
// The memory lives as long as the communicator. It is not freed when the tensor is
// collected, since tutti_mem_free must come at the same point of every rank's
// collectives and Lua collects when it likes; a scoped communicator frees it:
//   local c <close> = tutti.split(0); local t = c:mem_alloc{1 << 20}
// A communicator closed while tensors over its memory live is unusable at once, but
// keeps its memory mapped, and is destroyed when the last of its storages is collected.
#pragma once

#include <lua.hpp>

#include "bindings/lua/comm.h"

namespace tutti::lua {

int comm_mem_alloc(lua_State* L, const Target& target);

// Creates the metatable of the storages.
void open_shared_memory(lua_State* L);

}  // namespace tutti::lua
