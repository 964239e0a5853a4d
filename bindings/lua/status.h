// How a failed tutti_* call becomes a Lua error: a value a script can test, not only a
// string to match.
#pragma once

#include <lua.hpp>

#include "tutti.h"

namespace tutti::lua {

// Pushes a tutti.error: a table
//   {status = "TIMEOUT", name = "TUTTI_ERR_TIMEOUT", code = -2, message = tutti_last_error()}
// whose tostring is "<name>: <message>", e.g.
//   TUTTI_ERR_TIMEOUT: tutti_all_reduce: timed out after 10000 ms on comm "world" ...
// which is what lua5.4 and the tutti REPL print for it. Call it right after the
// failing call, before anything else can fail on this thread.
void push_error(lua_State* L, tutti_status status);

// Raises push_error's value.
[[noreturn]] void raise_status(lua_State* L, tutti_status status);

// Raises unless status is TUTTI_OK.
inline void check_status(lua_State* L, tutti_status status) {
  if (status != TUTTI_OK) raise_status(L, status);
}

}  // namespace tutti::lua
