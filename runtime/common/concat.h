// concat("rank ", 3, " of ", 8) == "rank 3 of 8": messages are built with this because
// GCC 12 (Debian 12's compiler) has no std::format.
#pragma once

#include <sstream>
#include <string>

namespace tutti {

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace tutti
