#include "runtime/common/duration_text.h"

#include <cstdio>
#include <cstring>

namespace tutti {

std::string duration_text(int64_t ms) {
  char text[32];
  if (ms < 1000) {
    snprintf(text, sizeof text, "%lld ms", static_cast<long long>(ms < 0 ? 0 : ms));
    return text;
  }
  snprintf(text, sizeof text, "%.1f", static_cast<double>(ms) / 1000.0);
  size_t length = strlen(text);
  if (length > 2 && strcmp(text + length - 2, ".0") == 0) text[length - 2] = '\0';
  return std::string(text) + " s";
}

}  // namespace tutti
