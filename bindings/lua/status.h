// How a failed tutti_* call becomes a Lua error: a value a script can test, not only a
// string to match.
#pragma once

#include <lua.hpp>
#include <string>

#include "tutti.h"

namespace tutti::lua {

// message, a tutti_last_error(), in the names a Lua script knows: the C calls it names
// become this module's (tutti_all_reduce -> tutti.all_reduce, tutti_comm_split ->
// comm:split, tutti_work_wait -> work:wait, tutti_comm_init -> tutti.world, which
// joins the world), and the config fields it tells to change become the variables a
// Lua program sets them with (config.init_timeout_ms -> TUTTI_INIT_TIMEOUT_MS).
std::string in_lua_terms(const char* message);

// Pushes a tutti.error: a table
//   {status = "TIMEOUT", name = "TUTTI_ERR_TIMEOUT", code = -2,
//    message = in_lua_terms(tutti_last_error())}
// whose tostring is "<name>: <message>", e.g.
//   TUTTI_ERR_TIMEOUT: all_reduce #4 on comm "world" (rank 1 of 3) timed out after 10 s;
//   ... or raise TUTTI_OP_TIMEOUT_MS
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
