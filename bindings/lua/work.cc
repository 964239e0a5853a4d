#include "bindings/lua/work.h"

#include <cstdio>

#include "bindings/lua/args.h"
#include "bindings/lua/state.h"
#include "bindings/lua/status.h"
#include "bindings/lua/tensor_list.h"

namespace tutti::lua {
namespace {

constexpr int kKeepSlot = 1;          // user value: everything the operation uses
constexpr int kDestinationsSlot = 2;  // user value: the tensors `buffer` is copied into

struct Work {
  tutti_work* handle;  // nullptr once released
  const char* buffer;  // inside the keep table; nullptr when there is nothing to copy
  size_t block_bytes;
  bool ended;  // the end was seen: results copied, references dropped
};

Work* to_work(lua_State* L, int index) { return static_cast<Work*>(luaL_checkudata(L, index, kWorkType)); }

Work* check_live(lua_State* L, int index) {
  Work* work = to_work(L, index);
  if (work->handle == nullptr) luaL_error(L, "attempt to use a released tutti.work");
  return work;
}

// Once the operation has ended with status: copies the results into the list (if it
// succeeded) and lets go of everything the operation used.
void settle(lua_State* L, int index, Work* work, tutti_status status) {
  if (work->ended) return;
  work->ended = true;
  index = lua_absindex(L, index);
  if (status == TUTTI_OK && work->buffer != nullptr) {
    lua_getiuservalue(L, index, kDestinationsSlot);
    unpack_list(L, -1, work->buffer, work->block_bytes);
    lua_pop(L, 1);
  }
  work->buffer = nullptr;
  lua_pushnil(L);
  lua_setiuservalue(L, index, kKeepSlot);
  lua_pushnil(L);
  lua_setiuservalue(L, index, kDestinationsSlot);
}

// The status of an operation known to have ended.
tutti_status ended_status(Work* work) { return tutti_work_wait(work->handle, 0); }

// A Work dropped before it finished, whose operation then failed: nobody is left to
// raise the error, so it is said once on stderr, as Python's binding warns of it (an
// irecv from a rank that ended, a send cancelled as its communicator was destroyed).
void warn_of_dropped_failure(Work* work) {
  if (work->ended) return;
  tutti_status status = ended_status(work);
  if (status == TUTTI_OK) return;
  std::fprintf(stderr, "tutti: a Work dropped before it finished failed: %s: %s\n", tutti_status_name(status),
               in_lua_terms(tutti_last_error()).c_str());
}

bool has_ended(Work* work) {
  int done = 0;
  tutti_work_test(work->handle, &done);  // cannot fail on a live handle
  return done != 0;
}

void release(Work* work) {
  tutti_work_release(work->handle);
  work->handle = nullptr;
}

// Raises the status's error after settling the Work, without losing the message.
[[noreturn]] void settle_and_raise(lua_State* L, int index, Work* work, tutti_status status) {
  push_error(L, status);
  settle(L, index, work, status);
  lua_error(L);
  __builtin_unreachable();
}

// w:wait([timeout_ms]): true once done; false if timeout_ms passed first (nil waits
// until the operation's own timeout); raises the operation's error if it failed.
int work_wait(lua_State* L) {
  Work* work = check_live(L, 1);
  lua_Integer timeout_ms = -1;
  if (!lua_isnoneornil(L, 2)) {
    bool valid = to_integer(L, 2, &timeout_ms) && timeout_ms >= 0;
    luaL_argcheck(L, valid, 2, "timeout_ms expected: an integer >= 0, or nil");
  }
  tutti_status status = tutti_work_wait(work->handle, timeout_ms);
  if (status == TUTTI_INPROGRESS) {
    lua_pushboolean(L, false);
    return 1;
  }
  if (status != TUTTI_OK) settle_and_raise(L, 1, work, status);
  settle(L, 1, work, status);
  lua_pushboolean(L, true);
  return 1;
}

// w:is_completed(): whether the operation has ended, successfully or not; never raises
// its error (wait does).
int work_is_completed(lua_State* L) {
  Work* work = check_live(L, 1);
  bool ended = work->ended || has_ended(work);
  if (ended) settle(L, 1, work, ended_status(work));
  lua_pushboolean(L, ended);
  return 1;
}

// Collected: release it, or hand it to the state while its operation still runs.
// Keeping the userdata in the state's table resurrects it, with everything it holds.
int work_gc(lua_State* L) {
  Work* work = to_work(L, 1);
  if (work->handle == nullptr) return 0;
  if (!work->ended && !has_ended(work)) {
    push_orphans(L);
    lua_pushvalue(L, 1);
    lua_pushboolean(L, true);
    lua_rawset(L, -3);
    ++orphan_count(L);
    return 0;
  }
  warn_of_dropped_failure(work);
  settle(L, 1, work, ended_status(work));
  release(work);
  return 0;
}

// A to-be-closed Work is waited for when its scope ends (the operation's own timeout
// bounds that), then released; its error is raised unless the scope is already
// ending with an error.
int work_close(lua_State* L) {
  Work* work = to_work(L, 1);
  if (work->handle == nullptr) return 0;
  tutti_status status = tutti_work_wait(work->handle, -1);
  if (status != TUTTI_OK && lua_isnil(L, 2)) {
    push_error(L, status);
    settle(L, 1, work, status);
    release(work);
    return lua_error(L);
  }
  settle(L, 1, work, status);
  release(work);
  return 0;
}

int work_tostring(lua_State* L) {
  Work* work = to_work(L, 1);
  if (work->handle == nullptr) {
    lua_pushliteral(L, "tutti.work (released)");
  } else if (!has_ended(work)) {
    lua_pushliteral(L, "tutti.work (running)");
  } else {
    tutti_status status = ended_status(work);
    lua_pushfstring(L, "tutti.work (%s)", status == TUTTI_OK ? "done" : tutti_status_name(status));
  }
  return 1;
}

const luaL_Reg kWorkMethods[] = {
    {"wait", work_wait},
    {"is_completed", work_is_completed},
    {nullptr, nullptr},
};

const luaL_Reg kWorkMetamethods[] = {
    {"__gc", work_gc},
    {"__close", work_close},
    {"__tostring", work_tostring},
    {nullptr, nullptr},
};

// Visits each orphan; `wait` says whether to wait for those still running.
void visit_orphans(lua_State* L, bool wait) {
  if (orphan_count(L) == 0) return;
  push_orphans(L);
  int orphans = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, orphans) != 0) {
    lua_pop(L, 1);  // the value; the key, the Work, stays for lua_next
    auto* work = static_cast<Work*>(lua_touserdata(L, -1));
    if (wait) tutti_work_wait(work->handle, -1);
    if (!has_ended(work)) continue;
    warn_of_dropped_failure(work);
    settle(L, -1, work, ended_status(work));
    release(work);
    // Clearing a field during the traversal is allowed (lua_next's rule).
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, orphans);
    --orphan_count(L);
  }
  lua_pop(L, 1);
}

}  // namespace

void push_work(lua_State* L, tutti_work* handle, const char* buffer, size_t block_bytes) {
  auto* work = static_cast<Work*>(lua_newuserdatauv(L, sizeof(Work), 2));
  *work = Work{handle, buffer, block_bytes, false};
  luaL_setmetatable(L, kWorkType);
  lua_insert(L, -3);
  lua_setiuservalue(L, -3, kDestinationsSlot);
  lua_setiuservalue(L, -2, kKeepSlot);
}

void sweep_orphans(lua_State* L) { visit_orphans(L, false); }

void settle_orphans(lua_State* L) { visit_orphans(L, true); }

void open_work(lua_State* L) {
  luaL_newmetatable(L, kWorkType);
  luaL_setfuncs(L, kWorkMetamethods, 0);
  lua_newtable(L);
  luaL_setfuncs(L, kWorkMethods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

}  // namespace tutti::lua
