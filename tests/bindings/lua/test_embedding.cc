// The embedding interface of bindings/lua/ltutti.h, as the REPL uses it through the
// static tutti_lua: luaopen_tutti through luaL_requiref, a world lent with use_world,
// replaced and taken away again (the host's communicator is never destroyed by the
// module), and t:show() sent to the host's sink. Worlds of one rank, in this process.
#include <criterion/criterion.h>
#include <stdlib.h>

#include <string>

#include "bindings/lua/ltutti.h"
#include "tests/support/processes.h"

namespace {

// A communicator of one rank meeting at a free loopback port; the Criterion process
// may have inherited a launcher's variables, which this config does not read.
tutti_comm* solo_comm() {
  static char method[64];
  snprintf(method, sizeof method, "tcp://127.0.0.1:%d", tt_free_port());
  tutti_config config;
  tutti_config_init(&config, sizeof config);
  config.rank = 0;
  config.world_size = 1;
  config.init_method = method;
  config.init_timeout_ms = 5000;
  config.op_timeout_ms = 5000;
  tutti_comm* comm = nullptr;
  tutti_status status = tutti_comm_init(&config, &comm);
  cr_assert_eq(status, TUTTI_OK, "tutti_comm_init: %s", tutti_last_error());
  return comm;
}

lua_State* open_lua() {
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  luaL_requiref(L, "tutti", luaopen_tutti, 1);
  lua_pop(L, 1);
  return L;
}

// Runs code; returns what it returned, as a string, or "error: <message>".
std::string run(lua_State* L, const char* code) {
  std::string result;
  if (luaL_dostring(L, code) != LUA_OK) {
    result = std::string("error: ") + lua_tostring(L, -1);
  } else if (lua_gettop(L) > 0) {
    result = luaL_tolstring(L, -1, nullptr);
    lua_pop(L, 1);
  }
  lua_settop(L, 0);
  return result;
}

// An expected "error: <message>" matches an error whose message contains <message>
// (after the position Lua puts in front).
void expect_run(lua_State* L, const char* code, const std::string& expected) {
  std::string got = run(L, code);
  bool matches = expected.starts_with("error: ")
                     ? got.starts_with("error: ") && got.find(expected.substr(7)) != std::string::npos
                     : got == expected;
  cr_expect(matches, "%s\n  returned: %s\n  expected: %s", code, got.c_str(), expected.c_str());
}

bool alive(tutti_comm* comm) {
  int32_t rank = -1;
  return tutti_comm_rank(comm, &rank) == TUTTI_OK;
}

void capture(void* context, const char* picture, size_t length) {
  static_cast<std::string*>(context)->append(picture, length);
}

}  // namespace

Test(embedding, use_world_lends_the_hosts_communicator_and_takes_it_back) {
  tutti_comm* comm = solo_comm();
  lua_State* L = open_lua();
  tutti::lua::use_world(L, comm);
  expect_run(L, "return tostring(tutti.world())", "tutti.comm (rank 0 of 1)");
  expect_run(L, "kept = tutti.world(); t = tutti.ones(3); tutti.all_reduce(t, 'max'); return t:sum()", "3.0");
  expect_run(L, "return tutti.world():all_reduce(tutti.ones(1), 'sum', {async = true}):wait()", "true");
  tutti::lua::use_world(L, nullptr);
  expect_run(L, "return tutti.rank()", "error: attempt to use a destroyed tutti.comm (the host took its world away)");
  expect_run(L, "return kept:rank()", "error: attempt to use a destroyed tutti.comm");
  expect_run(L, "return tostring(kept)", "tutti.comm (destroyed)");
  lua_close(L);
  cr_expect(alive(comm), "the module must never destroy the host's communicator");
  tutti_comm_destroy(comm);
}

Test(embedding, a_second_world_replaces_the_first) {
  tutti_comm* first = solo_comm();
  tutti_comm* second = solo_comm();
  lua_State* L = open_lua();
  tutti::lua::use_world(L, first);
  expect_run(L, "old = tutti.world(); return old:size()", "1");
  tutti::lua::use_world(L, first);  // the same one again: Lua's values of it stay valid
  expect_run(L, "return rawequal(old, tutti.world())", "true");
  tutti::lua::use_world(L, second);
  expect_run(L, "return old:size()", "error: attempt to use a destroyed tutti.comm");
  expect_run(L, "return tutti.size()", "1");
  lua_close(L);
  cr_expect(alive(first) && alive(second), "both communicators stay the host's");
  tutti_comm_destroy(first);
  tutti_comm_destroy(second);
}

// The host may lend its world and set its sink before luaopen_tutti runs.
Test(embedding, show_goes_to_the_hosts_sink) {
  setenv("NO_COLOR", "1", 1);
  lua_State* L = luaL_newstate();
  luaL_openlibs(L);
  std::string pictures;
  tutti::lua::set_show_sink(L, capture, &pictures);
  tutti_comm* comm = solo_comm();
  tutti::lua::use_world(L, comm);
  luaL_requiref(L, "tutti", luaopen_tutti, 1);
  lua_pop(L, 1);
  expect_run(L, "tutti.tensor{{1, 2}, {3, 14}}:show(); return tutti.rank()", "0");
  cr_expect(
      pictures.find("1") != std::string::npos && pictures.find("14") != std::string::npos && pictures.back() == '\n',
      "the sink got the picture as numbers, ending in a newline: [%s]", pictures.c_str());
  std::string first = pictures;
  expect_run(L, "tutti.zeros(1):show()", "");
  cr_expect(pictures.size() > first.size() && pictures.compare(0, first.size(), first) == 0,
            "a second picture is appended: [%s]", pictures.c_str());
  lua_close(L);
  tutti_comm_destroy(comm);
}
