// tutti_config_init, and how a caller's config (of any size a version of tutti.h
// gave it) becomes the runtime's options.
#include <algorithm>
#include <cstring>

#include "capi/config_options.h"
#include "capi/guard.h"
#include "runtime/common/log.h"
#include "runtime/common/settings.h"

namespace tutti::capi {
namespace {

constexpr uint32_t kConfigMagic = 0x54434647;  // "TCFG"

// The timeout to use: the environment's when set (logged if it overrides a value the
// program chose), else the config's, else the default.
int64_t resolve_timeout(int64_t configured, const char* field, const char* variable, int64_t fallback,
                        const char* api) {
  if (configured < -1 || configured == 0) {
    fail(Status::kInvalidArgument, concat(api, ": config.", field, " is ", configured,
                                          "; use a number of milliseconds >= 1, or -1 for the default"));
  }
  auto from_env = settings::integer(variable, 1, kMaxTimeoutMs);
  if (from_env) {
    if (configured > 0 && *from_env != configured) {
      log::info(variable, "=", *from_env, " overrides config.", field, "=", configured);
    }
    return *from_env;
  }
  return configured > 0 ? configured : fallback;
}

}  // namespace

comm::Options comm_options(const tutti_config* caller, const char* api) {
  tutti_config config;
  std::memset(&config, 0, sizeof config);
  tutti_config_init(&config, sizeof config);
  if (caller != nullptr) {
    if (caller->abi_magic != kConfigMagic || caller->struct_size < offsetof(tutti_config, abi_magic) + 4) {
      fail(Status::kInvalidArgument,
           concat(api,
                  ": config was not initialised; call tutti_config_init(&config, sizeof config) before "
                  "setting fields"));
    }
    // Fields this library knows but an older caller's struct lacks keep their defaults.
    std::memcpy(&config, caller, std::min(caller->struct_size, sizeof config));
  }
  comm::Options options;
  options.request.rank = config.rank;
  options.request.world_size = config.world_size;
  if (config.init_method) options.request.init_method = config.init_method;
  if (config.name) options.name = config.name;
  if (options.name.empty()) {
    fail(Status::kInvalidArgument, concat(api, ": config.name is empty; give a name, or NULL for \"world\""));
  }
  if (config.trace) options.trace_folder = config.trace;
  options.init_timeout_ms = resolve_timeout(config.init_timeout_ms, "init_timeout_ms", "TUTTI_INIT_TIMEOUT_MS",
                                            settings::kDefaultInitTimeoutMs, api);
  options.op_timeout_ms =
      resolve_timeout(config.op_timeout_ms, "op_timeout_ms", "TUTTI_OP_TIMEOUT_MS", settings::kDefaultOpTimeoutMs, api);
  return options;
}

}  // namespace tutti::capi

extern "C" {

TUTTI_API tutti_status tutti_config_init(tutti_config* config, size_t config_size) {
  using tutti::capi::invalid_argument;
  if (config == nullptr)
    return invalid_argument("tutti_config_init", "config is NULL; pass the address of a tutti_config");
  if (config_size < offsetof(tutti_config, abi_magic) + sizeof(uint32_t)) {
    return invalid_argument("tutti_config_init",
                            tutti::concat("config_size is ", config_size, "; pass sizeof(tutti_config)"));
  }
  tutti_config defaults;
  std::memset(&defaults, 0, sizeof defaults);
  defaults.struct_size = std::min(config_size, sizeof defaults);
  defaults.abi_magic = tutti::capi::kConfigMagic;
  defaults.rank = -1;
  defaults.world_size = -1;
  defaults.init_method = nullptr;
  defaults.init_timeout_ms = -1;
  defaults.op_timeout_ms = -1;
  defaults.name = nullptr;
  defaults.trace = nullptr;
  // Write no more than the caller's struct holds: it may come from an older tutti.h.
  std::memcpy(config, &defaults, defaults.struct_size);
  return TUTTI_OK;
}

}  // extern "C"
