// Every TUTTI_* environment variable, in one table (STYLE G16): its type, default and
// a one-sentence doc. `tutti info` prints it. Reading a variable through here is also
// where an unparsable value becomes an error naming the variable and the accepted forms.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tutti::settings {

// The timeouts every config starts from (TUTTI_INIT_TIMEOUT_MS, TUTTI_OP_TIMEOUT_MS):
// the table's defaults, Comm's options and tutti_config's -1.
inline constexpr int64_t kDefaultInitTimeoutMs = 120000;
inline constexpr int64_t kDefaultOpTimeoutMs = 300000;
// TUTTI_WAIT_REPORT_MS: how long an operation waits before it says what for.
inline constexpr int64_t kDefaultWaitReportMs = 10000;

struct Setting {
  const char* name;
  const char* type;           // "int", "string", "host:port", "level", "url", "secret"
  const char* default_value;  // as text, "" when there is none
  const char* doc;
};

std::span<const Setting> table();

// Whether a setting's value must never be shown (type "secret"): tutti info and logs
// say only whether it is set.
bool is_secret(const Setting& setting);

// The variable's value, or nullopt when it is unset or empty.
std::optional<std::string> text(const char* name);
// The variable as an integer in [min, max]; throws Error(kInvalidArgument) naming the
// variable when it is not one.
std::optional<int64_t> integer(const char* name, int64_t min, int64_t max);

// TUTTI_LOG_LEVEL as a number (0 error, 1 warn, 2 info, 3 debug); warn when unset.
int log_level();

}  // namespace tutti::settings
