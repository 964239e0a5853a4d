#include "runtime/transport/ucx/context.h"

#include <dirent.h>
#include <sys/uio.h>
#include <ucs/config/global_opts.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"

namespace tutti::transport::ucx {
namespace {

[[noreturn]] void fail_init(const char* call, ucs_status_t status) {
  fail(Status::kTransport, concat("could not initialise UCX (", call, ": ", ucs_status_string(status),
                                  "); check the UCX_* variables in the environment (ucx_info -c lists what "
                                  "UCX reads, ucx_info -d the transports it finds)"));
}

// Sets one of the defaults described in context.h unless the user chose a value
// through any of the variables that control it.
void set_default(ucp_config_t* config, const char* name, const char* value,
                 std::initializer_list<const char*> user_variables) {
  for (const char* variable : user_variables) {
    if (std::getenv(variable) != nullptr) {
      log::debug("ucx: ", variable, " is set in the environment, so tutti leaves ", name, " to it");
      return;
    }
  }
  ucs_status_t status = ucp_config_modify(config, name, value);
  if (status != UCS_OK) fail_init(concat("ucp_config_modify ", name, "=", value).c_str(), status);
}

// The transports config allows (its TLS, from the environment or UCX's config files),
// as ucp_config_print writes it: "UCX_TLS=tcp,sm".
std::string configured_transports(const ucp_config_t* config) {
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = ::open_memstream(&text, &length);
  if (stream == nullptr) return "all";
  ucp_config_print(config, stream, nullptr, UCS_CONFIG_PRINT_CONFIG);
  std::fclose(stream);
  std::string printed(text, length);
  std::free(text);
  const std::string prefix = "UCX_TLS=";
  size_t at = printed.rfind("\n" + prefix);
  if (at != std::string::npos)
    ++at;
  else if (printed.rfind(prefix, 0) == 0)
    at = 0;
  else
    return "all";
  size_t end = printed.find('\n', at);
  return printed.substr(at + prefix.size(), end == std::string::npos ? std::string::npos : end - at - prefix.size());
}

ucp_context_h create_context() {
  if (std::getenv("UCX_MODULES") == nullptr && !rdma_devices_present()) {
    // Before UCX loads its transports' modules, at the first ucp_init in the process.
    ucs_status_t status = ucs_global_opts_set_value("MODULES", "^ib,rdmacm");
    if (status != UCS_OK) fail_init("ucs_global_opts_set_value MODULES=^ib,rdmacm", status);
  }
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) fail_init("ucp_config_read", status);
  try {
    std::string transports = configured_transports(config);
    if (transports == "all" && std::getenv("UCX_TLS") == nullptr) {
      set_default(config, "TLS", "^sysv", {});
      transports = "^sysv";
    }
    if (tls_allows(transports, {"posix", "sysv"}, {"sm", "shm", "mm"})) {
      set_default(config, "MM_ERROR_HANDLING", "y",
                  {"UCX_MM_ERROR_HANDLING", "UCX_POSIX_ERROR_HANDLING", "UCX_SYSV_ERROR_HANDLING"});
      set_default(config, "MM_RX_BUFS_GROW", "65",
                  {"UCX_MM_RX_BUFS_GROW", "UCX_POSIX_RX_BUFS_GROW", "UCX_SYSV_RX_BUFS_GROW"});
    }
    if (tls_allows(transports, {"tcp"}, {})) {
      set_default(config, "TX_SEG_SIZE", "64K", {"UCX_TCP_TX_SEG_SIZE"});
      set_default(config, "RX_SEG_SIZE", "256K", {"UCX_TCP_RX_SEG_SIZE"});
    }
    set_default(config, "KEEPALIVE_INTERVAL", "1s", {"UCX_KEEPALIVE_INTERVAL"});
    const bool zero_copy_on_host = tls_allows(transports, {"cma"}, {"sm", "shm"}) &&
                                   std::getenv("UCX_CMA_MEMORY_INVALIDATE") == nullptr && cma_permitted();
    if (zero_copy_on_host) set_default(config, "MEMORY_INVALIDATE", "y", {});
    set_default(config, "RNDV_THRESH", zero_copy_on_host ? "128K" : "256K", {"UCX_RNDV_THRESH"});
  } catch (...) {
    ucp_config_release(config);
    throw;
  }

  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
  // WAKEUP makes UCX keep only transports that can wake a sleeping worker, so that
  // wait_for_activity can sleep in poll() instead of spinning.
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  // Workers of different communicators run on different threads at once.
  params.mt_workers_shared = 1;
  params.name = "tutti";
  ucp_context_h context = nullptr;
  status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (status != UCS_OK) fail_init("ucp_init", status);
  return context;
}

}  // namespace

bool rdma_devices_present() {
  DIR* devices = ::opendir("/sys/class/infiniband");
  if (devices == nullptr) {
    // No such class: no RDMA device, unless sysfs itself is missing (a bare chroot),
    // which says nothing either way.
    return ::access("/sys/class", F_OK) != 0;
  }
  bool any = false;
  while (dirent* entry = ::readdir(devices)) {
    if (entry->d_name[0] != '.') {
      any = true;
      break;
    }
  }
  ::closedir(devices);
  return any;
}

bool cma_permitted() {
  uint64_t source = 1, target = 0;
  iovec local{&target, sizeof target};
  iovec remote{&source, sizeof source};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof source)) return false;
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  return !(yama >> scope) || scope <= 1;
}

bool tls_allows(std::string_view tls, std::initializer_list<std::string_view> transports,
                std::initializer_list<std::string_view> aliases) {
  std::vector<std::string_view> names;
  for (size_t start = 0; start <= tls.size();) {
    size_t comma = tls.find(',', start);
    if (comma == std::string_view::npos) comma = tls.size();
    std::string_view name = tls.substr(start, comma - start);
    name = name.substr(0, name.find(':'));  // "tcp:aux": the transport's name only
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (!name.empty()) names.push_back(name);
    start = comma + 1;
  }
  if (names.empty()) return true;  // UCX's default, all
  const bool excluding = names.front().front() == '^';
  if (excluding) names.front().remove_prefix(1);
  auto named = [&](std::string_view wanted) { return std::find(names.begin(), names.end(), wanted) != names.end(); };
  bool whole_group = named("all");
  for (std::string_view alias : aliases) whole_group = whole_group || named(alias);
  bool any = false, every = true;
  for (std::string_view transport : transports) {
    any = any || named(transport);
    every = every && named(transport);
  }
  if (excluding) return !whole_group && !every;
  return whole_group || any;
}

namespace {

// The process's context: Context::shared and Context::renew.
struct ProcessContext {
  std::mutex mutex;
  std::weak_ptr<Context> context;  // guarded by mutex
};

ProcessContext& process_context() {
  static ProcessContext instance;
  return instance;
}

}  // namespace

std::shared_ptr<Context> Context::shared() {
  ProcessContext& process = process_context();
  std::lock_guard<std::mutex> lock(process.mutex);
  if (auto context = process.context.lock()) return context;
  std::shared_ptr<Context> context(new Context(create_context()));
  process.context = context;
  return context;
}

std::shared_ptr<Context> Context::renew(const std::shared_ptr<Context>& stale) {
  ProcessContext& process = process_context();
  std::lock_guard<std::mutex> lock(process.mutex);
  if (auto context = process.context.lock(); context && context != stale) return context;
  std::shared_ptr<Context> context(new Context(create_context()));
  process.context = context;
  return context;
}

Context::~Context() { ucp_cleanup(context_); }

}  // namespace tutti::transport::ucx
