// The TUTTI_* table (STYLE G16) and how its values are read. Criterion runs each test
// in its own process, so setenv here cannot leak into another test.
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "runtime/common/error.h"
#include "runtime/common/settings.h"

namespace settings = tutti::settings;

namespace {

// The message integer() throws; fails the test when it does not throw.
std::string integer_error(const char* name, const char* value, int64_t min, int64_t max) {
  setenv(name, value, 1);
  try {
    settings::integer(name, min, max);
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kInvalidArgument);
    return error.what();
  }
  cr_assert_fail("%s=\"%s\" was accepted in [%lld, %lld]", name, value, static_cast<long long>(min),
                 static_cast<long long>(max));
  return "";
}

}  // namespace

Test(settings, table_entries_are_unique_and_documented, .timeout = 10) {
  const std::set<std::string> types = {"int", "string", "host:port", "level", "url", "secret"};
  std::set<std::string> names;
  cr_assert(!settings::table().empty());
  for (const settings::Setting& setting : settings::table()) {
    cr_assert(setting.name != nullptr && setting.type != nullptr && setting.default_value != nullptr &&
              setting.doc != nullptr);
    std::string name = setting.name;
    cr_assert(name.rfind("TUTTI_", 0) == 0 && name.size() > 6, "%s is not a TUTTI_* name", setting.name);
    cr_assert(name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos,
              "%s is not an upper-case variable name", setting.name);
    cr_assert(names.insert(name).second, "%s is in the table twice", setting.name);
    cr_assert(types.count(setting.type) == 1, "%s has unknown type \"%s\"", setting.name, setting.type);
    // One sentence at least: a capital letter first and a full stop last.
    std::string doc = setting.doc;
    cr_assert(doc.size() >= 20, "%s is not documented: \"%s\"", setting.name, setting.doc);
    cr_assert(doc.back() == '.', "%s's doc is not a sentence: \"%s\"", setting.name, setting.doc);
    if (std::string(setting.type) == "int" && setting.default_value[0] != '\0') {
      char* end = nullptr;
      std::strtoll(setting.default_value, &end, 10);
      cr_assert(*end == '\0', "%s's default \"%s\" is not an int", setting.name, setting.default_value);
    }
  }
  for (const char* expected : {"TUTTI_RANK", "TUTTI_WORLD_SIZE", "TUTTI_ADDR", "TUTTI_PORT", "TUTTI_LOG_LEVEL"}) {
    cr_assert(names.count(expected) == 1, "%s is missing from the table", expected);
  }
}

Test(settings, text_treats_empty_as_unset, .timeout = 10) {
  unsetenv("TUTTI_HOST");
  cr_assert(!settings::text("TUTTI_HOST").has_value());
  setenv("TUTTI_HOST", "", 1);
  cr_assert(!settings::text("TUTTI_HOST").has_value());
  setenv("TUTTI_HOST", "10.0.0.2", 1);
  cr_assert(settings::text("TUTTI_HOST") == std::optional<std::string>("10.0.0.2"));
}

Test(settings, integer_accepts_numbers_in_range, .timeout = 10) {
  unsetenv("TUTTI_OP_TIMEOUT_MS");
  cr_assert(!settings::integer("TUTTI_OP_TIMEOUT_MS", 0, 1000000).has_value());
  setenv("TUTTI_OP_TIMEOUT_MS", "", 1);
  cr_assert(!settings::integer("TUTTI_OP_TIMEOUT_MS", 0, 1000000).has_value());
  setenv("TUTTI_OP_TIMEOUT_MS", "60000", 1);
  cr_assert(settings::integer("TUTTI_OP_TIMEOUT_MS", 0, 1000000) == std::optional<int64_t>(60000));
  // The bounds are inclusive.
  setenv("TUTTI_OP_TIMEOUT_MS", "0", 1);
  cr_assert(settings::integer("TUTTI_OP_TIMEOUT_MS", 0, 10) == std::optional<int64_t>(0));
  setenv("TUTTI_OP_TIMEOUT_MS", "10", 1);
  cr_assert(settings::integer("TUTTI_OP_TIMEOUT_MS", 0, 10) == std::optional<int64_t>(10));
  setenv("TUTTI_OP_TIMEOUT_MS", "-1", 1);
  cr_assert(settings::integer("TUTTI_OP_TIMEOUT_MS", -1, 10) == std::optional<int64_t>(-1));
  setenv("TUTTI_OP_TIMEOUT_MS", "9223372036854775807", 1);
  cr_assert(settings::integer("TUTTI_OP_TIMEOUT_MS", 0, INT64_MAX) == std::optional<int64_t>(INT64_MAX));
}

Test(settings, integer_rejects_what_is_not_a_number_in_range, .timeout = 10) {
  const char* bad[] = {"3x", "x", "1.5", "1e3", "0x10", "99999999999999999999", "-99999999999999999999"};
  for (const char* value : bad) {
    std::string message = integer_error("TUTTI_INIT_TIMEOUT_MS", value, 0, INT64_MAX);
    cr_assert(message.find(std::string("TUTTI_INIT_TIMEOUT_MS=\"") + value + "\"") == 0, "%s", message.c_str());
    cr_assert(message.find("is not an integer in [0, 9223372036854775807]") != std::string::npos, "%s",
              message.c_str());
  }
  std::string message = integer_error("TUTTI_PORT", "65536", 1, 65535);
  cr_assert_str_eq(message.c_str(), "TUTTI_PORT=\"65536\" is not an integer in [1, 65535]; set it to one, or unset it");
  integer_error("TUTTI_PORT", "0", 1, 65535);
  integer_error("TUTTI_PORT", "-5", 1, 65535);
}

Test(settings, log_level_names, .timeout = 10) {
  unsetenv("TUTTI_LOG_LEVEL");
  cr_assert(settings::log_level() == 1, "the default is warn");
  const char* names[] = {"error", "warn", "info", "debug"};
  for (int level = 0; level < 4; ++level) {
    setenv("TUTTI_LOG_LEVEL", names[level], 1);
    cr_assert(settings::log_level() == level, "%s", names[level]);
  }
  setenv("TUTTI_LOG_LEVEL", "DEBUG", 1);
  cr_assert(settings::log_level() == 3, "names are case-insensitive");
  setenv("TUTTI_LOG_LEVEL", "Info", 1);
  cr_assert(settings::log_level() == 2);
  setenv("TUTTI_LOG_LEVEL", "loud", 1);
  cr_assert(settings::log_level() == 1, "an unknown name falls back to warn");
  setenv("TUTTI_LOG_LEVEL", "3", 1);
  cr_assert(settings::log_level() == 1, "numbers are not names");
}

Test(settings, log_level_warns_about_an_unknown_name, .init = cr_redirect_stderr, .timeout = 10) {
  setenv("TUTTI_LOG_LEVEL", "loud", 1);
  settings::log_level();
  fflush(stderr);
  std::string written;
  char buffer[512];
  FILE* captured = cr_get_redirected_stderr();
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, captured)) > 0;) written.append(buffer, n);
  cr_assert(written.find("TUTTI_LOG_LEVEL=\"loud\"") != std::string::npos, "stderr: %s", written.c_str());
  cr_assert(written.find("error, warn, info, debug") != std::string::npos, "stderr: %s", written.c_str());
}
