// The per-thread detail behind a failing status (STYLE G7).
#pragma once

#include <string>

namespace tutti::capi {

void set_last_error(const std::string& message);
const char* last_error();

}  // namespace tutti::capi
