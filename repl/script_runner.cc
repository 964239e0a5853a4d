#include "repl/script_runner.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "bindings/lua/ltutti.h"
#include "repl/job.h"
#include "repl/lua_chunk.h"
#include "repl/lua_host.h"

namespace tutti::repl {
namespace {

constexpr std::chrono::seconds kQuietExitDelay{2};
// How long a failed rank that serves the store keeps it up before it exits.
constexpr std::chrono::milliseconds kStoreGrace{300};

// lua.c's createargtable: arg[0] is the script, arg[1..] its arguments and arg[-1]
// the program; the arguments are also pushed, for the chunk's `...`.
int push_arguments(lua_State* L, std::span<const std::string> args) {
  lua_createtable(L, static_cast<int>(args.size()), 1);
  lua_pushliteral(L, "tutti");
  lua_rawseti(L, -2, -1);
  for (size_t i = 0; i < args.size(); ++i) {
    lua_pushlstring(L, args[i].data(), args[i].size());
    lua_rawseti(L, -2, static_cast<lua_Integer>(i));
  }
  lua_setglobal(L, "arg");
  luaL_checkstack(L, static_cast<int>(args.size()), "too many arguments to the script");
  for (size_t i = 1; i < args.size(); ++i) lua_pushlstring(L, args[i].data(), args[i].size());
  return static_cast<int>(args.size()) - 1;
}

}  // namespace

int run_script(std::span<const std::string> args) {
  lua_State* L = new_lua_state();
  if (L == nullptr) {
    std::fputs("tutti: cannot create a Lua state: not enough memory\n", stderr);
    return 1;
  }
  // Every rank loads the same file and fails the same way, before anyone waits for
  // the others at the rendezvous: one report is enough, and nobody hangs.
  if (luaL_loadfile(L, args[0].c_str()) != LUA_OK) {
    std::string message = pop_error(L);
    lua_close(L);
    if (speaks_before_joining()) {
      std::fprintf(stderr, "tutti: %s\n", message.c_str());
    } else {
      // A launcher stops the job when a rank fails (tutti launch, srun
      // --kill-on-bad-exit): the others give the speaking rank, which started with
      // them, time to have said why.
      std::this_thread::sleep_for(kQuietExitDelay);
    }
    return 1;
  }
  tutti_comm* world = join_job("world");
  if (world == nullptr) {
    lua_close(L);
    return 1;
  }
  tutti::lua::use_world(L, world);
  int nargs = push_arguments(L, args);
  if (call_with_traceback(L, nargs, 0) != LUA_OK) {
    int32_t rank = 0, size = 0;
    tutti_comm_rank(world, &rank);
    tutti_comm_size(world, &size);
    std::string message = pop_error(L);
    std::fflush(stdout);
    std::fprintf(stderr, "tutti: rank %d of %d: %s\n", rank, size, message.c_str());
    // Ending without leaving the world is how the other ranks learn at once that this
    // one failed: the store declares it lost, and their next collective fails with
    // TUTTI_ERR_PEER_LOST naming it, instead of waiting out the op timeout for it.
    // A rank that serves the store would take it down at once too, and with it what
    // the others were about to read (which rank was lost before this one failed: CI
    // saw a survivor report only that the store went). So it aborts its world, which
    // the store reports as this rank's loss, and keeps the store up a moment.
    if (may_serve_store()) {
      tutti_comm_abort(world);
      std::this_thread::sleep_for(kStoreGrace);
    }
    _exit(1);
  }
  lua_close(L);
  tutti_comm_destroy(world);
  return 0;
}

}  // namespace tutti::repl
