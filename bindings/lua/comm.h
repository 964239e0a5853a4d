// tutti.comm: a communicator as a userdata, with the collectives as methods. The
// module's functions of the same names act on the world (tutti.all_reduce(t) is
// tutti.world():all_reduce(t)); both are made from one implementation per function
// that takes the communicator as a Target, so that argument positions in error
// messages are the same either way.
#pragma once

#include <lua.hpp>

#include "bindings/lua/state.h"
#include "tutti.h"

namespace tutti::lua {

inline constexpr const char* kCommType = "tutti.comm";

struct Comm {
  tutti_comm* handle;   // nullptr once destroyed
  bool owned;           // false for the host's world (use_world): never destroyed here
  bool closed;          // closed by Lua: unusable, destroyed once no shared storage needs it
  int shared_storages;  // live storages from mem_alloc (shared_memory.cc), which the handle maps
};

// Pushes a new tutti.comm for handle.
void push_comm(lua_State* L, tutti_comm* handle, bool owned);
// The comm userdata at index, or an argerror naming tutti.comm.
Comm* to_comm(lua_State* L, int index);
// The live handle of the tutti.comm at arg; raises "attempt to use a destroyed
// tutti.comm" when it was destroyed.
tutti_comm* check_comm(lua_State* L, int arg);
// Marks the userdata destroyed, and destroys the handle if owned, once no tensor from
// its mem_alloc is left (else when the last one is collected: release_storage).
void close_comm(Comm* comm);
// A storage from mem_alloc on comm was collected.
void release_storage(Comm* comm);

// The communicator a function acts on, and where its own arguments start.
struct Target {
  tutti_comm* comm;
  int self;   // stack index of the tutti.comm; 0 for the module's functions (the world)
  int first;  // stack index of the first argument after the communicator
};
// Pushes the target's tutti.comm userdata.
void push_target(lua_State* L, const Target& target);
int32_t target_rank(const Target& target);
int32_t target_size(const Target& target);

using CommFunction = int (*)(lua_State* L, const Target& target);

template <CommFunction function>
int on_world(lua_State* L) {
  return function(L, Target{world_comm(L), 0, 1});
}

template <CommFunction function>
int on_comm(lua_State* L) {
  return function(L, Target{check_comm(L, 1), 1, 2});
}

// Creates the tutti.comm metatable and adds the world's functions to the module
// table at index `module`.
void open_comm(lua_State* L, int module);

// collectives.cc: every collective and point-to-point call, for the world (module
// functions) and as methods.
extern const luaL_Reg kWorldCollectives[];
extern const luaL_Reg kCommCollectives[];

}  // namespace tutti::lua
