#include "bindings/lua/status.h"

#include <cctype>
#include <cstring>
#include <utility>

namespace tutti::lua {
namespace {

constexpr const char* kErrorType = "tutti.error";

int error_tostring(lua_State* L) {
  lua_getfield(L, 1, "name");
  lua_getfield(L, 1, "message");
  lua_pushfstring(L, "%s: %s", luaL_optstring(L, -2, "TUTTI_ERR_UNKNOWN"), luaL_optstring(L, -1, ""));
  return 1;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The C name tutti_<rest> as a Lua script calls it.
std::string lua_name(const std::string& rest) {
  if (rest == "comm_init" || rest == "comm_join") return "tutti.world";
  if (rest.rfind("comm_", 0) == 0) return "comm:" + rest.substr(5);
  if (rest.rfind("work_", 0) == 0) return "work:" + rest.substr(5);
  return "tutti." + rest;
}

// The config fields messages tell to change, longest form first: a field already
// followed by its variable keeps the variable alone.
constexpr std::pair<const char*, const char*> kConfigFields[] = {
    {"config.init_timeout_ms (TUTTI_INIT_TIMEOUT_MS)", "TUTTI_INIT_TIMEOUT_MS"},
    {"config.op_timeout_ms (TUTTI_OP_TIMEOUT_MS)", "TUTTI_OP_TIMEOUT_MS"},
    {"op_timeout_ms (TUTTI_OP_TIMEOUT_MS)", "TUTTI_OP_TIMEOUT_MS"},
    {"config.init_timeout_ms", "TUTTI_INIT_TIMEOUT_MS"},
    {"config.op_timeout_ms", "TUTTI_OP_TIMEOUT_MS"},
    {"config.init_method", "TUTTI_INIT_METHOD"},
    {"config.world_size", "TUTTI_WORLD_SIZE"},
    {"config.rank", "TUTTI_RANK"},
};

}  // namespace

std::string in_lua_terms(const char* message) {
  const std::string text = message;
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const bool starts_word = at == 0 || !(is_name_char(text[at - 1]) || text[at - 1] == '.' || text[at - 1] == '/');
    if (starts_word) {
      bool replaced = false;
      for (const auto& [field, variable] : kConfigFields) {
        const size_t length = std::strlen(field);
        if (text.compare(at, length, field) == 0 && (at + length == text.size() || !is_name_char(text[at + length]))) {
          out += variable;
          at += length;
          replaced = true;
          break;
        }
      }
      if (replaced) continue;
      if (text.compare(at, 6, "tutti_") == 0 && at + 6 < text.size() &&
          std::islower(static_cast<unsigned char>(text[at + 6]))) {
        size_t end = at + 6;
        while (end < text.size() && is_name_char(text[end])) ++end;
        out += lua_name(text.substr(at + 6, end - at - 6));
        at = end;
        continue;
      }
    }
    out += text[at++];
  }
  return out;
}

void push_error(lua_State* L, tutti_status status) {
  const char* name = tutti_status_name(status);
  const char* word = std::strncmp(name, "TUTTI_ERR_", 10) == 0 ? name + 10 : name + 6;  // after TUTTI_
  lua_createtable(L, 0, 4);
  lua_pushstring(L, word);
  lua_setfield(L, -2, "status");
  lua_pushstring(L, name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, status);
  lua_setfield(L, -2, "code");
  lua_pushstring(L, in_lua_terms(tutti_last_error()).c_str());
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
