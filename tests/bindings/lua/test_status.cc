// The library's messages in a Lua script's names (bindings/lua/status.h in_lua_terms):
// C calls become the module's functions and methods, config fields the variables a Lua
// program sets, and nothing else changes.
#include <criterion/criterion.h>

#include <string>

#include "bindings/lua/status.h"

using tutti::lua::in_lua_terms;

namespace {

void expect_lua(const char* message, const std::string& want) {
  const std::string got = in_lua_terms(message);
  cr_expect_eq(got, want, "in_lua_terms(\"%s\")\n  gave \"%s\"\n  want \"%s\"", message, got.c_str(), want.c_str());
}

}  // namespace

Test(lua_status, c_calls_become_the_modules_names) {
  expect_lua("tutti_all_reduce: count 3 is not a multiple of 2", "tutti.all_reduce: count 3 is not a multiple of 2");
  expect_lua("tutti_recv #1 (peer 1, tag 99) was cancelled", "tutti.recv #1 (peer 1, tag 99) was cancelled");
  expect_lua("tutti_comm_split: color -2 is not allowed", "comm:split: color -2 is not allowed");
  expect_lua("tutti_work_wait: the Work was already waited for", "work:wait: the Work was already waited for");
  expect_lua("tutti_comm_init: rank 1 cannot reach the rendezvous store",
             "tutti.world: rank 1 cannot reach the rendezvous store");
  expect_lua("after tutti_mem_alloc, call tutti_barrier", "after tutti.mem_alloc, call tutti.barrier");
}

Test(lua_status, config_fields_become_the_variables_that_set_them) {
  expect_lua("or raise config.init_timeout_ms (TUTTI_INIT_TIMEOUT_MS)", "or raise TUTTI_INIT_TIMEOUT_MS");
  expect_lua("or raise op_timeout_ms (TUTTI_OP_TIMEOUT_MS)", "or raise TUTTI_OP_TIMEOUT_MS");
  expect_lua("config.rank 5 is not below config.world_size 4", "TUTTI_RANK 5 is not below TUTTI_WORLD_SIZE 4");
  expect_lua("config.init_method \"x://\" is unknown", "TUTTI_INIT_METHOD \"x://\" is unknown");
}

Test(lua_status, other_text_is_left_as_it_is) {
  expect_lua("", "");
  expect_lua("TUTTI_ERR_TIMEOUT and TUTTI_SECRET stay", "TUTTI_ERR_TIMEOUT and TUTTI_SECRET stay");
  expect_lua("/dev/shm/tutti-12-3 and libtutti_x and my.tutti_y", "/dev/shm/tutti-12-3 and libtutti_x and my.tutti_y");
  expect_lua("config.ranks and xconfig.rank", "config.ranks and xconfig.rank");
  expect_lua("ends in tutti_", "ends in tutti_");
}
