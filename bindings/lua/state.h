// What the module keeps per lua_State, in one registry-held userdata created before
// anything else of the module: the world communicator (made lazily from the
// environment, or lent by the host through use_world), the show sink, and the Works
// that were collected while their operation still ran. Its __gc runs last when the
// state closes (Lua finalizes in reverse order of creation): it destroys a world it
// made and settles those Works.
#pragma once

#include <lua.hpp>

#include "bindings/lua/ltutti.h"
#include "tutti.h"

namespace tutti::lua {

struct ShowTarget {
  ShowSink sink;
  void* context;
};

// Creates the state on first use; luaopen_tutti, use_world and set_show_sink all may
// come first.
void open_state(lua_State* L);

// Whether this process was started to join a running job rather than start one:
// TUTTI_JOIN=1, which tutti launch --restart sets for the ranks it restarts. Its world
// is then made with tutti_comm_join, not tutti_comm_init.
bool started_to_join();

// The world communicator: the host's, or one made with tutti_comm_init(NULL) (or
// tutti_comm_join, started_to_join) on first use. Raises the init error, or "attempt
// to use a destroyed tutti.comm" once the host took its world away.
tutti_comm* world_comm(lua_State* L);
// Pushes the world's tutti.comm userdata, as world_comm.
void push_world(lua_State* L);

ShowTarget show_target(lua_State* L);

// Pushes the table of orphaned Works (keys: the tutti.work userdata), and the number of
// them, kept so that looking costs nothing while there are none.
void push_orphans(lua_State* L);
int& orphan_count(lua_State* L);

}  // namespace tutti::lua
