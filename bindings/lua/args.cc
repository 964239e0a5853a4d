#include "bindings/lua/args.h"

#include <cstdio>
#include <cstring>

namespace tutti::lua {
namespace {

// Indexed by the enums' values, which tutti.h fixes forever.
constexpr const char* kDtypeNames[] = {"int8",     "uint8",   "int32",   "int64",       "float16",
                                       "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2"};
constexpr const char* kOpNames[] = {"sum", "prod", "min", "max", "avg"};
constexpr int kDtypeCount = sizeof kDtypeNames / sizeof kDtypeNames[0];
constexpr int kOpCount = sizeof kOpNames / sizeof kOpNames[0];

// "one of a, b, c", for the messages. Written to a buffer rather than pushed: a value
// pushed before arg_expected would stand where an absent argument is looked for.
void write_choices(char* out, size_t size, const char* const* names, int count) {
  size_t used = std::snprintf(out, size, "one of ");
  for (int i = 0; i < count && used < size; ++i) {
    used += std::snprintf(out + used, size - used, "%s%s", i > 0 ? ", " : "", names[i]);
  }
}

int check_name(lua_State* L, int arg, const char* what, const char* const* names, int count) {
  if (lua_type(L, arg) == LUA_TSTRING) {
    const char* name = lua_tostring(L, arg);
    for (int i = 0; i < count; ++i) {
      if (std::strcmp(name, names[i]) == 0) return i;
    }
  }
  char choices[160];
  write_choices(choices, sizeof choices, names, count);
  arg_expected(L, arg, what, choices);
}

}  // namespace

void arg_expected(lua_State* L, int arg, const char* what, const char* expected) {
  if (lua_type(L, arg) == LUA_TSTRING) {
    lua_pushfstring(L, "%s expected: %s; got \"%s\"", what, expected, lua_tostring(L, arg));
  } else if (lua_type(L, arg) == LUA_TNUMBER) {
    lua_pushfstring(L, "%s expected: %s; got %s", what, expected, luaL_tolstring(L, arg, nullptr));
  } else {
    lua_pushfstring(L, "%s expected: %s; got %s", what, expected, luaL_typename(L, arg));
  }
  luaL_argerror(L, arg, lua_tostring(L, -1));
  __builtin_unreachable();
}

bool to_integer(lua_State* L, int index, lua_Integer* out) {
  int is_integer = 0;
  if (lua_type(L, index) == LUA_TNUMBER) *out = lua_tointegerx(L, index, &is_integer);
  return is_integer != 0;
}

const char* dtype_name(tutti_dtype dtype) {
  int index = static_cast<int>(dtype);
  return index >= 0 && index < kDtypeCount ? kDtypeNames[index] : "unknown";
}

tutti_dtype check_dtype(lua_State* L, int arg) {
  return static_cast<tutti_dtype>(check_name(L, arg, "dtype", kDtypeNames, kDtypeCount));
}

tutti_dtype opt_dtype(lua_State* L, int arg, tutti_dtype fallback) {
  return lua_isnoneornil(L, arg) ? fallback : check_dtype(L, arg);
}

tutti_op opt_op(lua_State* L, int arg) {
  if (lua_isnoneornil(L, arg)) return TUTTI_OP_SUM;
  return static_cast<tutti_op>(check_name(L, arg, "op", kOpNames, kOpCount));
}

int32_t check_rank(lua_State* L, int arg, const char* what, int32_t size) {
  lua_Integer rank = 0;
  if (!to_integer(L, arg, &rank) || rank < 0 || rank >= size) {
    char expected[48];
    std::snprintf(expected, sizeof expected, "a rank in [0, %d]", static_cast<int>(size - 1));
    arg_expected(L, arg, what, expected);
  }
  return static_cast<int32_t>(rank);
}

int32_t opt_rank(lua_State* L, int arg, const char* what, int32_t size, int32_t fallback) {
  return lua_isnoneornil(L, arg) ? fallback : check_rank(L, arg, what, size);
}

int32_t opt_tag(lua_State* L, int arg) {
  if (lua_isnoneornil(L, arg)) return 0;
  lua_Integer tag = 0;
  if (!to_integer(L, arg, &tag) || tag < 0 || tag > INT32_MAX)
    arg_expected(L, arg, "tag", "an integer in [0, 2147483647]");
  return static_cast<int32_t>(tag);
}

int32_t check_int32(lua_State* L, int arg, const char* what) {
  lua_Integer value = 0;
  if (!to_integer(L, arg, &value) || value < INT32_MIN || value > INT32_MAX)
    arg_expected(L, arg, what, "a 32-bit integer");
  return static_cast<int32_t>(value);
}

CallOptions take_options(lua_State* L, int first, int required) {
  CallOptions options;
  int top = lua_gettop(L);
  if (top < first + required || lua_type(L, top) != LUA_TTABLE) return options;
  if (lua_rawgeti(L, top, 1) != LUA_TNIL) {
    lua_pop(L, 1);
    return options;
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  while (lua_next(L, top) != 0) {
    // Key at -2, value at -1; a misspelt key is an error rather than silently ignored.
    if (lua_type(L, -2) != LUA_TSTRING || std::strcmp(lua_tostring(L, -2), "async") != 0) {
      const char* quote = lua_type(L, -2) == LUA_TSTRING ? "\"" : "";
      lua_pushfstring(L, "options: unknown key %s%s%s; the only option is async", quote, luaL_tolstring(L, -2, nullptr),
                      quote);
      luaL_argerror(L, top, lua_tostring(L, -1));
    }
    if (!lua_isboolean(L, -1)) {
      lua_pushfstring(L, "options: async expected: a boolean; got %s", luaL_typename(L, -1));
      luaL_argerror(L, top, lua_tostring(L, -1));
    }
    options.async = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_settop(L, top - 1);
  return options;
}

}  // namespace tutti::lua
