// Fuzzes how a process learns its place and its settings from the environment: the
// launcher variables (runtime/rendezvous/launch_env.h), the init-method plan built on
// them (plan.h), host:port parsing (host_port.h), the TUTTI_* settings table
// (runtime/common/settings.h) and TUTTI_ALGO (runtime/collectives/selector.h).
//
// Input: lines of NAME=value, the environment. Three names set the program's config
// instead: config.rank, config.world_size (decimal; anything else stays -1) and
// config.init_method. Lines without '=' or with a NUL byte (no environment can hold
// one) are skipped.
// Properties checked, beyond "no crash, no leak, no undefined behaviour":
//   - failures are tutti::Error(kInvalidArgument) with a message that says how to fix
//     it (a "; " clause, STYLE G15; TUTTI_ALGO's give an example instead);
//   - what read_launch_env returns is consistent: rank in [0, world_size), local rank
//     below local size, local size at most the world size, a port in 1..65535 or -1;
//   - a plan has a rank in its world, a local rank and size that fit in it, and a
//     store it can reach: a port in 1..65535
//     (none for file:// or PMIx, where rank 0 picks one) and a host, or a file path;
//   - split_host_port splits without losing a byte; parse_port gives 1..65535 only;
//   - settings::integer stays within its bounds; TUTTI_ALGO either parses or fails.
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/collectives/selector.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/settings.h"
#include "runtime/rendezvous/host_port.h"
#include "runtime/rendezvous/launch_env.h"
#include "runtime/rendezvous/plan.h"
#include "tests/fuzz/fuzz_check.h"

using tutti::concat;
using tutti::fuzz::require;
namespace rendezvous = tutti::rendezvous;

namespace {

struct Input {
  std::map<std::string, std::string> env;
  rendezvous::Request request;
};

int parse_int(const std::string& text) {
  int value = -1;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : -1;
}

Input parse_input(std::string_view text) {
  Input input;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    size_t equals = line.find('=');
    if (equals == std::string_view::npos || line.find('\0') != std::string_view::npos) continue;
    std::string name(line.substr(0, equals));
    std::string value(line.substr(equals + 1));
    if (name == "config.rank") {
      input.request.rank = parse_int(value);
    } else if (name == "config.world_size") {
      input.request.world_size = parse_int(value);
    } else if (name == "config.init_method") {
      input.request.init_method = value;
    } else {
      input.env[name] = value;  // the last one wins, as with setenv
    }
  }
  return input;
}

// TUTTI_ALGO's messages give the fix as an example after a comma instead of a "; "
// clause, so for them only a message is required.
void check_error(const tutti::Error& error, const char* call, bool fix_clause = true) {
  std::string_view message = error.what();
  require(error.status() == tutti::Status::kInvalidArgument, concat(call, " failed with another status: ", message));
  require(!message.empty(), concat(call, " gave an empty message"));
  require(!fix_clause || message.find("; ") != std::string_view::npos,
          concat(call, " gave a message with no fix: ", message));
}

void check_launch_env(const rendezvous::LaunchEnv& launch) {
  std::string where = concat(launch.launcher, " launch environment: ");
  require(!launch.launcher.empty(), "a launch environment without a launcher");
  require(launch.world_size >= 1 && launch.rank >= 0 && launch.rank < launch.world_size,
          concat(where, "rank ", launch.rank, " of ", launch.world_size));
  require(launch.local_size == -1 || (launch.local_size >= 1 && launch.local_size <= launch.world_size),
          concat(where, "local size ", launch.local_size, " in a world of ", launch.world_size));
  require(launch.local_rank == -1 || (launch.local_rank >= 0 && launch.local_rank < launch.world_size),
          concat(where, "local rank ", launch.local_rank, " in a world of ", launch.world_size));
  require(launch.local_rank == -1 || launch.local_size == -1 || launch.local_rank < launch.local_size,
          concat(where, "local rank ", launch.local_rank, " of ", launch.local_size));
  require(launch.node_rank >= -1, concat(where, "node rank ", launch.node_rank));
  require(launch.store_port == -1 || (launch.store_port >= 1 && launch.store_port <= 65535),
          concat(where, "store port ", launch.store_port));
  require(launch.store_host.empty() || launch.store_port != -1, concat(where, "a store host without a port"));
}

void check_plan(const rendezvous::Request& request, const rendezvous::Plan& plan) {
  require(plan.world_size >= 1 && plan.rank >= 0 && plan.rank < plan.world_size,
          concat("plan: rank ", plan.rank, " of ", plan.world_size));
  require(request.rank < 0 || plan.rank == request.rank, "plan: config.rank was not used");
  require(request.world_size < 0 || plan.world_size == request.world_size, "plan: config.world_size was not used");
  require(!plan.node_key.empty() && !plan.launcher.empty(), "plan: no node key or launcher");
  require(plan.local_size == -1 || (plan.local_size >= 1 && plan.local_size <= plan.world_size),
          concat("plan: local size ", plan.local_size, " in a world of ", plan.world_size));
  require(plan.local_rank == -1 || (plan.local_rank >= 0 && plan.local_rank < plan.world_size),
          concat("plan: local rank ", plan.local_rank, " in a world of ", plan.world_size));
  const std::string& method = plan.init_method;
  if (method.rfind("file://", 0) == 0) {
    require(!plan.file_path.empty() && plan.file_path[0] == '/', "plan: file:// without an absolute path");
    require(plan.store_port == 0, "plan: file:// with a port");
  } else if (plan.launcher == "none (a world of one)") {
    // A program started alone serves its own store on a free loopback port.
    require(method == "env://" && plan.world_size == 1 && plan.serve_store, "plan: a world of one that is not alone");
    require(plan.store_host == "127.0.0.1" && plan.store_port == 0, "plan: a world of one not on a free loopback port");
  } else if (plan.store_via_pmix) {
    require(method == "env://", concat("plan: PMIx with init method \"", method, "\""));
    require(!plan.store_host.empty(), "plan: PMIx without a host to serve on");
  } else {
    require(method == "env://" || method.rfind("tcp://", 0) == 0, concat("plan: init method \"", method, "\""));
    require(plan.store_port >= 1, "plan: no store port");
    if (method == "env://") require(!plan.store_host.empty(), "plan: env:// without a store host");
  }
  require(!plan.serve_store || plan.rank == 0, "plan: a rank other than 0 serves the store");
}

void check_host_port(const std::string& text) {
  std::string host, port;
  if (rendezvous::split_host_port(text, &host, &port)) {
    require(!host.empty(), concat("split_host_port(\"", text, "\") gave an empty host"));
    bool bracketed = !text.empty() && text[0] == '[';
    std::string rebuilt = bracketed ? concat("[", host, "]:", port) : concat(host, ":", port);
    require(rebuilt == text, concat("split_host_port(\"", text, "\") gave \"", host, "\" and \"", port, "\""));
    require(bracketed || host.find(':') == std::string::npos, concat("split_host_port(\"", text, "\"): bare IPv6"));
  }
  if (std::optional<uint16_t> number = rendezvous::parse_port(text)) {
    require(
        *number >= 1 && !text.empty() && text.size() <= 5 && text.find_first_not_of("0123456789") == std::string::npos,
        concat("parse_port(\"", text, "\") gave ", *number));
  }
}

// The settings read the process environment: each TUTTI_* variable of the table that
// the input names is put there for this input only. putenv (with strings owned here)
// rather than setenv, because glibc keeps every value setenv was ever given, which a
// long fuzzing run would pile up.
class ProcessEnvironment {
 public:
  explicit ProcessEnvironment(const std::map<std::string, std::string>& env) {
    for (const tutti::settings::Setting& setting : tutti::settings::table()) {
      auto found = env.find(setting.name);
      if (found == env.end()) continue;
      entries_.push_back(concat(setting.name, "=", found->second));
      names_.push_back(setting.name);
    }
    for (std::string& entry : entries_) putenv(entry.data());
  }
  ~ProcessEnvironment() {
    for (const char* name : names_) unsetenv(name);
  }
  ProcessEnvironment(const ProcessEnvironment&) = delete;
  ProcessEnvironment& operator=(const ProcessEnvironment&) = delete;

 private:
  std::vector<std::string> entries_;
  std::vector<const char*> names_;
};

void check_settings(const std::map<std::string, std::string>& env) {
  ProcessEnvironment scoped(env);
  for (const tutti::settings::Setting& setting : tutti::settings::table()) {
    auto given = env.find(setting.name);
    std::optional<std::string> text = tutti::settings::text(setting.name);
    bool expected = given != env.end() && !given->second.empty();
    require(text.has_value() == expected && (!text || *text == given->second),
            concat("settings::text(", setting.name, ") is not the value given"));
    if (std::string_view(setting.type) != "int") continue;
    // The bounds the runtime reads with: tutti info's, and the timeouts'.
    for (auto [min, max] : {std::pair<int64_t, int64_t>{INT64_MIN, INT64_MAX}, {1, int64_t{1} << 40}, {0, 1}}) {
      try {
        std::optional<int64_t> value = tutti::settings::integer(setting.name, min, max);
        require(value.has_value() == expected, concat("settings::integer(", setting.name, ") ignored the value"));
        if (value)
          require(*value >= min && *value <= max, concat("settings::integer(", setting.name, ") gave ", *value));
      } catch (const tutti::Error& error) {
        check_error(error, "settings::integer");
        require(std::string_view(error.what()).find(setting.name) != std::string_view::npos,
                concat("settings::integer's message does not name ", setting.name));
      }
    }
  }
  try {
    namespace collectives = tutti::collectives;
    collectives::Selector selector = collectives::Selector::from_environment();
    for (int kind = 0; kind < tutti::kKindCount; ++kind) {
      // With a shared-memory group and a hierarchy every forced choice is legal.
      selector.choose(static_cast<tutti::Kind>(kind), 1024, 4, true, tutti::collectives::HierarchyShape::kInPlace);
    }
  } catch (const tutti::Error& error) {
    check_error(error, "Selector::from_environment", false);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Whatever started the fuzzer must not leak its own settings into the inputs.
  for (const tutti::settings::Setting& setting : tutti::settings::table()) unsetenv(setting.name);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input input = parse_input(std::string_view(reinterpret_cast<const char*>(data), size));
  // As process_environment reads it: an empty value is unset.
  rendezvous::Environment env = [&input](const char* name) -> std::optional<std::string> {
    auto found = input.env.find(name);
    if (found == input.env.end() || found->second.empty()) return std::nullopt;
    return found->second;
  };

  try {
    if (std::optional<rendezvous::LaunchEnv> launch = rendezvous::read_launch_env(env)) check_launch_env(*launch);
  } catch (const tutti::Error& error) {
    check_error(error, "read_launch_env");
  }
  try {
    check_plan(input.request, rendezvous::make_plan(input.request, env));
  } catch (const tutti::Error& error) {
    check_error(error, "make_plan");
  }
  for (const auto& [name, value] : input.env) check_host_port(value);
  check_host_port(input.request.init_method.size() > 6 ? input.request.init_method.substr(6) : "");
  check_settings(input.env);
  return 0;
}
