// The tutti Lua module: `require "tutti"` from a plain lua5.4, and the library that
// the `tutti` REPL and script runner (repl/) open in their own lua_State.
#pragma once

#include <lua.hpp>

#include "tutti.h"

// luaopen_tutti is the one symbol the module exports (the build hides the rest).
#define TUTTI_LUA_API __attribute__((visibility("default")))

// Opens the module and returns its table, as every luaopen_* does. Loaded by a plain
// Lua, the module joins the job on first use of a collective (tutti_comm_init with
// the environment's launcher variables) and leaves it when the state closes.
extern "C" TUTTI_LUA_API int luaopen_tutti(lua_State* L);

namespace tutti::lua {

// For a host that made its own communicator (the REPL): the module uses `world` as
// tutti.world instead of initializing one. The host keeps ownership and must call
// this again (or with nullptr) before it destroys `world`; Lua values that still
// refer to the old one then raise "attempt to use a destroyed tutti.comm". Tensors
// from tutti.mem_alloc point into the world's memory: a host that lets scripts call
// it hands the world back with destroy_world instead.
void use_world(lua_State* L, tutti_comm* world);
// For a host done with the world it lent: takes it away as use_world(L, nullptr) does,
// and destroys it, at once or, while tensors from tutti.mem_alloc still point into its
// memory, when the last of them is collected. The host must not destroy it itself.
void destroy_world(lua_State* L);

// Where t:show() sends the picture it drew (ANSI text ending in a newline). The
// default writes it to stdout; the REPL collects each rank's pictures to lay them
// out side by side.
using ShowSink = void (*)(void* context, const char* picture, size_t length);
void set_show_sink(lua_State* L, ShowSink sink, void* context);

}  // namespace tutti::lua
