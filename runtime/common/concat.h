// concat("rank ", 3, " of ", 8) == "rank 3 of 8": messages are built with this because
// GCC 12 (Debian 12's compiler) has no std::format. It writes what operator<< would,
// but appends text and integers to the string directly: keys for the store are built
// with it on every request, and an ostringstream (its locale, its buffer) cost more
// than the request's own encoding. Other types (floating point, enums, anything with
// an operator<<) go through a stream, so their text stays the stream's.
#pragma once

#include <charconv>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace tutti {
namespace detail {

template <typename T>
void append_part(std::string& out, const T& part) {
  using Part = std::decay_t<T>;
  if constexpr (std::is_same_v<Part, std::string> || std::is_same_v<Part, std::string_view> || std::is_array_v<T>) {
    out += part;  // a string literal or char array is text up to its NUL, as for operator<<
  } else if constexpr (std::is_same_v<Part, const char*> || std::is_same_v<Part, char*>) {
    if (part != nullptr) out += part;
  } else if constexpr (std::is_same_v<Part, char> || std::is_same_v<Part, signed char> ||
                       std::is_same_v<Part, unsigned char>) {
    out += static_cast<char>(part);  // a character, as operator<< writes these
  } else if constexpr (std::is_same_v<Part, bool>) {
    out += part ? '1' : '0';
  } else if constexpr (std::is_integral_v<Part>) {
    char digits[24];
    out.append(digits, std::to_chars(digits, digits + sizeof digits, part).ptr);
  } else {
    std::ostringstream stream;
    stream << part;
    out += stream.str();
  }
}

}  // namespace detail

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::string out;
  (detail::append_part(out, parts), ...);
  return out;
}

}  // namespace tutti
