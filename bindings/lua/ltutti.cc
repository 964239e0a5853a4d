// luaopen_tutti and the module table. What the module offers, and where it lives:
//   tutti.rank(), size(), local_rank(), local_size(), node_rank(), world()
//       the world communicator (comm.cc, state.cc), joined from the launcher's
//       environment on first use
//   tutti.print(...), config()                    this file
//   tutti.zeros, ones, full, tensor, arange       tensors (tensor*.cc), tutti.disk and
//       tutti.square                              the tutorial's drawing (tensor_draw.cc)
//   tutti.all_reduce, reduce, broadcast, all_gather, reduce_scatter, gather, scatter,
//       all_to_all, all_to_all_single, barrier, send, recv, isend, irecv, split   on
//       the world, and as
//       methods of every tutti.comm (collectives.cc, comm.cc); {async = true} gives a
//       tutti.work (work.cc)
//   tutti.mem_alloc                               a tensor in memory every rank on the
//       node maps, on the world and as a method of every tutti.comm (shared_memory.cc)
#include "bindings/lua/ltutti.h"

#include <cstring>

#include "bindings/lua/comm.h"
#include "bindings/lua/shared_memory.h"
#include "bindings/lua/state.h"
#include "bindings/lua/tensor.h"
#include "bindings/lua/work.h"

extern char** environ;

namespace tutti::lua {
namespace {

int module_world(lua_State* L) {
  push_world(L);
  return 1;
}

// tutti.print(...): the tutorials' rank_print, "Rank: 0, <text>.", with the arguments
// converted by tostring and joined by spaces. It goes through the global print, so a
// host that captures print (the REPL) captures it too, and builds the line first so
// that it leaves in one write.
int module_print(lua_State* L) {
  int arguments = lua_gettop(L);
  tutti_comm* world = world_comm(L);
  int32_t rank = 0;
  tutti_comm_rank(world, &rank);
  luaL_Buffer line;
  luaL_buffinit(L, &line);
  lua_pushfstring(L, "Rank: %d, ", static_cast<int>(rank));
  luaL_addvalue(&line);
  for (int i = 1; i <= arguments; ++i) {
    if (i > 1) luaL_addchar(&line, ' ');
    luaL_tolstring(L, i, nullptr);
    luaL_addvalue(&line);
  }
  luaL_addchar(&line, '.');
  luaL_pushresult(&line);
  lua_getglobal(L, "print");
  lua_insert(L, -2);
  lua_call(L, 1, 0);
  return 0;
}

// tutti.config(): the TUTTI_* environment variables that are set, name -> value, as
// the runtime reads them (tutti info lists every setting with its default and what it
// does). The value of any variable with SECRET in its name is shown as "(set)".
int module_config(lua_State* L) {
  lua_newtable(L);
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (std::strncmp(*entry, "TUTTI_", 6) != 0 || equals == nullptr || equals[1] == '\0') continue;
    lua_pushlstring(L, *entry, static_cast<size_t>(equals - *entry));
    if (std::strstr(lua_tostring(L, -1), "SECRET") != nullptr) {
      lua_pushliteral(L, "(set)");
    } else {
      lua_pushstring(L, equals + 1);
    }
    lua_rawset(L, -3);
  }
  return 1;
}

const luaL_Reg kModuleFunctions[] = {
    {"world", module_world},
    {"print", module_print},
    {"config", module_config},
    {nullptr, nullptr},
};

}  // namespace
}  // namespace tutti::lua

extern "C" int luaopen_tutti(lua_State* L) {
  using namespace tutti::lua;
  // Made first so that its finalizer runs last when the state closes.
  open_state(L);
  luaL_newlib(L, kModuleFunctions);
  open_tensor(L, -1);
  open_comm(L, -1);
  open_shared_memory(L);
  open_work(L);
  return 1;
}
