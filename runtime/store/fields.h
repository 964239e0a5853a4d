// The records the store writes about members (loss events, roster lines) are fields
// separated by a byte that none of them holds: identities, addresses and reasons are
// text, and activities are the board's "<seq> <running> <ms> <name> ...".
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace tutti::store {

constexpr char kFieldSeparator = '\x1f';

inline std::vector<std::string> split_fields(const std::string& value) {
  std::vector<std::string> fields(1);
  for (char c : value) {
    if (c == kFieldSeparator) {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  return fields;
}

inline std::optional<int64_t> parse_field_int(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

}  // namespace tutti::store
