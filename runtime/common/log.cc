#include "runtime/common/log.h"

#include <unistd.h>

#include <mutex>

#include "runtime/common/settings.h"

namespace tutti::log {
namespace {

std::mutex identity_mutex;
std::string identity_text;

const char* level_name(Level level) {
  switch (level) {
    case Level::kError: return "ERROR";
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kDebug: return "DEBUG";
  }
  return "?";
}

}  // namespace

bool enabled(Level level) {
  static const Level threshold = static_cast<Level>(settings::log_level());
  return level <= threshold;
}

void set_identity(const std::string& identity) {
  std::lock_guard<std::mutex> lock(identity_mutex);
  identity_text = identity;
}

void write(Level level, const std::string& message) {
  std::string line;
  {
    std::lock_guard<std::mutex> lock(identity_mutex);
    line = concat("[tutti ", getpid(), identity_text.empty() ? "" : " ", identity_text, "] ", level_name(level), ": ",
                  message, "\n");
  }
  // One write(2) per line: concurrent writers on a shared pipe then never split a line.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace tutti::log
