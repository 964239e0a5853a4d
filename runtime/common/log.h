// Log lines go to stderr, one write per line so that lines of concurrent threads and
// ranks never interleave mid-line. The level comes from TUTTI_LOG_LEVEL (settings.h).
#pragma once

#include <string>

#include "runtime/common/concat.h"

namespace tutti::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool enabled(Level level);
// Prefixes every later line of this process, e.g. "rank 3/8" once the rank is known.
void set_identity(const std::string& identity);
void write(Level level, const std::string& message);

template <typename... Parts>
void error(const Parts&... parts) {
  if (enabled(Level::kError)) write(Level::kError, concat(parts...));
}
template <typename... Parts>
void warn(const Parts&... parts) {
  if (enabled(Level::kWarn)) write(Level::kWarn, concat(parts...));
}
template <typename... Parts>
void info(const Parts&... parts) {
  if (enabled(Level::kInfo)) write(Level::kInfo, concat(parts...));
}
template <typename... Parts>
void debug(const Parts&... parts) {
  if (enabled(Level::kDebug)) write(Level::kDebug, concat(parts...));
}

}  // namespace tutti::log
