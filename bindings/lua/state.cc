#include "bindings/lua/state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bindings/lua/comm.h"
#include "bindings/lua/status.h"
#include "bindings/lua/work.h"

namespace tutti::lua {
namespace {

// A registry field rather than a light-userdata key: the REPL's copy of this code and a
// tutti.so loaded into the same state then find the same state.
constexpr const char* kStateKey = "tutti.state";
constexpr int kWorldSlot = 1;    // user value: the world's tutti.comm, or nil
constexpr int kOrphansSlot = 2;  // user value: the orphaned Works

struct State {
  ShowSink sink;
  void* sink_context;
  bool host_world;  // use_world was called: the host owns the world, never made here
  int orphans;
};

void write_to_stdout(void*, const char* picture, size_t length) {
  std::fwrite(picture, 1, length, stdout);
  std::fflush(stdout);
}

// Pushes the state userdata and returns it.
State* push_state(lua_State* L) {
  lua_getfield(L, LUA_REGISTRYINDEX, kStateKey);
  return static_cast<State*>(lua_touserdata(L, -1));
}

int state_gc(lua_State* L) {
  lua_getiuservalue(L, 1, kWorldSlot);
  if (auto* world = static_cast<Comm*>(luaL_testudata(L, -1, kCommType))) close_comm(world);
  lua_pop(L, 1);
  // After the world, so that Works on it are already over (aborted if need be).
  settle_orphans(L);
  return 0;
}

}  // namespace

void open_state(lua_State* L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, kStateKey) != LUA_TNIL) {
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  auto* state = static_cast<State*>(lua_newuserdatauv(L, sizeof(State), 2));
  *state = State{write_to_stdout, nullptr, false, 0};
  lua_newtable(L);
  lua_setiuservalue(L, -2, kOrphansSlot);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, state_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, kStateKey);
}

bool started_to_join() {
  const char* join = std::getenv("TUTTI_JOIN");
  return join != nullptr && std::strcmp(join, "1") == 0;
}

void push_world(lua_State* L) {
  State* state = push_state(L);
  lua_getiuservalue(L, -1, kWorldSlot);
  if (lua_isnil(L, -1)) {
    if (state->host_world) luaL_error(L, "attempt to use a destroyed tutti.comm (the host took its world away)");
    lua_pop(L, 1);
    tutti_comm* handle = nullptr;
    check_status(L, started_to_join() ? tutti_comm_join(nullptr, &handle) : tutti_comm_init(nullptr, &handle));
    push_comm(L, handle, true);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, -3, kWorldSlot);
  }
  lua_remove(L, -2);
}

tutti_comm* world_comm(lua_State* L) {
  push_world(L);
  tutti_comm* handle = check_comm(L, -1);
  lua_pop(L, 1);
  return handle;
}

ShowTarget show_target(lua_State* L) {
  State* state = push_state(L);
  lua_pop(L, 1);
  return ShowTarget{state->sink, state->sink_context};
}

void push_orphans(lua_State* L) {
  push_state(L);
  lua_getiuservalue(L, -1, kOrphansSlot);
  lua_remove(L, -2);
}

int& orphan_count(lua_State* L) {
  State* state = push_state(L);
  lua_pop(L, 1);
  return state->orphans;
}

void use_world(lua_State* L, tutti_comm* world) {
  open_state(L);
  State* state = push_state(L);
  state->host_world = true;
  lua_getiuservalue(L, -1, kWorldSlot);
  auto* old = static_cast<Comm*>(luaL_testudata(L, -1, kCommType));
  lua_pop(L, 1);
  if (old != nullptr && !old->closed && old->handle == world) {
    lua_pop(L, 1);
    return;
  }
  if (old != nullptr) close_comm(old);
  if (world != nullptr) {
    push_comm(L, world, false);
  } else {
    lua_pushnil(L);
  }
  lua_setiuservalue(L, -2, kWorldSlot);
  lua_pop(L, 1);
}

void destroy_world(lua_State* L) {
  open_state(L);
  push_state(L);
  lua_getiuservalue(L, -1, kWorldSlot);
  if (auto* world = static_cast<Comm*>(luaL_testudata(L, -1, kCommType))) {
    world->owned = true;
    close_comm(world);
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setiuservalue(L, -2, kWorldSlot);
  lua_pop(L, 1);
}

void set_show_sink(lua_State* L, ShowSink sink, void* context) {
  open_state(L);
  State* state = push_state(L);
  lua_pop(L, 1);
  state->sink = sink != nullptr ? sink : write_to_stdout;
  state->sink_context = sink != nullptr ? context : nullptr;
}

}  // namespace tutti::lua
