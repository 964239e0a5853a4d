#include "bindings/lua/status.h"

#include <cstring>

namespace tutti::lua {
namespace {

constexpr const char* kErrorType = "tutti.error";

int error_tostring(lua_State* L) {
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "message");
  lua_pushfstring(L, "%s: %s", luaL_optstring(L, -2, "TUTTI_ERR_UNKNOWN"), luaL_optstring(L, -1, ""));
  return 1;
}

}  // namespace

void push_error(lua_State* L, tutti_status status) {
  // The message names the C call; the caller's line is in Lua's traceback.
  const char* name = tutti_status_name(status);
  const char* word = std::strncmp(name, "TUTTI_ERR_", 10) == 0 ? name + 10 : name + 6;  // after TUTTI_
  lua_createtable(L, 0, 4);
  lua_pushstring(L, word);
  lua_setfield(L, -2, "status");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, status);
  lua_setfield(L, -2, "code");
  lua_pushstring(L, tutti_last_error());
  lua_setfield(L, -2, "message");
  if (luaL_newmetatable(L, kErrorType)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
}

void raise_status(lua_State* L, tutti_status status) {
  push_error(L, status);
  lua_error(L);
  __builtin_unreachable();
}

}  // namespace tutti::lua
