#include "bindings/lua/comm.h"

#include "bindings/lua/args.h"
#include "bindings/lua/shared_memory.h"
#include "bindings/lua/status.h"

namespace tutti::lua {
namespace {

int comm_rank(lua_State* L, const Target& target) {
  lua_pushinteger(L, target_rank(target));
  return 1;
}

int comm_size(lua_State* L, const Target& target) {
  lua_pushinteger(L, target_size(target));
  return 1;
}

// The node facts, as tutti.h's tutti_comm_local_rank, _local_size and _node_rank give them.
template <tutti_status (*Get)(const tutti_comm*, int32_t*)>
int comm_node_fact(lua_State* L, const Target& target) {
  int32_t value = 0;
  check_status(L, Get(target.comm, &value));
  lua_pushinteger(L, value);
  return 1;
}

// split(color [, key]): the ranks passing the same color form a new communicator,
// ordered by key (default: the rank here). A nil or false color joins none and
// returns nil, as MPI_UNDEFINED does. Collective over the communicator.
int comm_split(lua_State* L, const Target& target) {
  int32_t color = TUTTI_UNDEFINED;
  if (lua_toboolean(L, target.first)) color = check_int32(L, target.first, "color");
  int32_t key = lua_isnoneornil(L, target.first + 1) ? target_rank(target) : check_int32(L, target.first + 1, "key");
  tutti_comm* handle = nullptr;
  check_status(L, tutti_comm_split(target.comm, color, key, &handle));
  if (handle == nullptr) {
    lua_pushnil(L);
  } else {
    push_comm(L, handle, true);
  }
  return 1;
}

// shrink(): after a PEER_LOST error, a new communicator of the ranks the store has not
// declared lost, in their order (tutti_comm_shrink). Every survivor calls it.
int comm_shrink(lua_State* L, const Target& target) {
  tutti_comm* handle = nullptr;
  check_status(L, tutti_comm_shrink(target.comm, &handle));
  push_comm(L, handle, true);
  return 1;
}

// grow(count): a new communicator of these ranks, keeping their numbers, and the next
// count processes that join the job (tutti_comm_grow; under tutti launch --restart,
// the ranks it restarts). Every rank calls it with the same count.
int comm_grow(lua_State* L, const Target& target) {
  int32_t count = check_int32(L, target.first, "count");
  tutti_comm* handle = nullptr;
  check_status(L, tutti_comm_grow(target.comm, count, &handle));
  push_comm(L, handle, true);
  return 1;
}

int comm_close(lua_State* L) {
  close_comm(to_comm(L, 1));
  return 0;
}

int comm_tostring(lua_State* L) {
  Comm* comm = to_comm(L, 1);
  if (comm->closed) {
    lua_pushliteral(L, "tutti.comm (destroyed)");
  } else {
    Target target{comm->handle, 1, 2};
    lua_pushfstring(L, "tutti.comm (rank %d of %d)", static_cast<int>(target_rank(target)),
                    static_cast<int>(target_size(target)));
  }
  return 1;
}

#define TUTTI_LUA_COMM_FUNCTIONS(X)                      \
  X("rank", comm_rank)                                   \
  X("size", comm_size)                                   \
  X("local_rank", comm_node_fact<tutti_comm_local_rank>) \
  X("local_size", comm_node_fact<tutti_comm_local_size>) \
  X("node_rank", comm_node_fact<tutti_comm_node_rank>)   \
  X("split", comm_split)                                 \
  X("shrink", comm_shrink)                               \
  X("grow", comm_grow)                                   \
  X("mem_alloc", comm_mem_alloc)
#define TUTTI_LUA_ON_WORLD(name, function) {name, on_world<function>},
#define TUTTI_LUA_ON_COMM(name, function) {name, on_comm<function>},

const luaL_Reg kWorldFunctions[] = {TUTTI_LUA_COMM_FUNCTIONS(TUTTI_LUA_ON_WORLD){nullptr, nullptr}};
const luaL_Reg kCommMethods[] = {TUTTI_LUA_COMM_FUNCTIONS(TUTTI_LUA_ON_COMM){nullptr, nullptr}};
const luaL_Reg kCommMetamethods[] = {
    {"__gc", comm_close},
    {"__close", comm_close},
    {"__tostring", comm_tostring},
    {nullptr, nullptr},
};

// Pushes the tutti.comm metatable, made on first use: the host may lend its world
// (use_world) before luaopen_tutti runs.
void push_metatable(lua_State* L) {
  if (!luaL_newmetatable(L, kCommType)) return;
  luaL_setfuncs(L, kCommMetamethods, 0);
  lua_newtable(L);
  luaL_setfuncs(L, kCommMethods, 0);
  luaL_setfuncs(L, kCommCollectives, 0);
  lua_setfield(L, -2, "__index");
}

}  // namespace

void push_comm(lua_State* L, tutti_comm* handle, bool owned) {
  auto* comm = static_cast<Comm*>(lua_newuserdatauv(L, sizeof(Comm), 0));
  *comm = Comm{handle, owned, false, 0};
  push_metatable(L);
  lua_setmetatable(L, -2);
}

Comm* to_comm(lua_State* L, int index) { return static_cast<Comm*>(luaL_checkudata(L, index, kCommType)); }

tutti_comm* check_comm(lua_State* L, int arg) {
  Comm* comm = to_comm(L, arg);
  if (comm->closed) luaL_error(L, "attempt to use a destroyed tutti.comm");
  return comm->handle;
}

void close_comm(Comm* comm) {
  comm->closed = true;
  // Destroying the handle unmaps its shared memory, which tensors may still point into.
  if (comm->shared_storages > 0) return;
  // A failure to leave cleanly has no one to report to here: the handle is gone either way.
  if (comm->owned && comm->handle != nullptr) tutti_comm_destroy(comm->handle);
  comm->handle = nullptr;
}

void release_storage(Comm* comm) {
  --comm->shared_storages;
  if (comm->closed) close_comm(comm);
}

void push_target(lua_State* L, const Target& target) {
  if (target.self != 0) {
    lua_pushvalue(L, target.self);
  } else {
    push_world(L);
  }
}

int32_t target_rank(const Target& target) {
  int32_t rank = 0;
  tutti_comm_rank(target.comm, &rank);  // cannot fail on a live handle
  return rank;
}

int32_t target_size(const Target& target) {
  int32_t size = 0;
  tutti_comm_size(target.comm, &size);
  return size;
}

void open_comm(lua_State* L, int module) {
  module = lua_absindex(L, module);
  push_metatable(L);
  lua_pop(L, 1);
  lua_pushvalue(L, module);
  luaL_setfuncs(L, kWorldFunctions, 0);
  luaL_setfuncs(L, kWorldCollectives, 0);
  lua_pop(L, 1);
}

}  // namespace tutti::lua
