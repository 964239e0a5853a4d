// How messages write a duration: "400 ms" below a second, then seconds to one decimal
// without a trailing ".0" ("3 s", "2.5 s"), so that every message reads alike.
#pragma once

#include <cstdint>
#include <string>

namespace tutti {

std::string duration_text(int64_t ms);

}  // namespace tutti
