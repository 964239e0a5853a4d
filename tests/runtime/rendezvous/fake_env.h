// An Environment made of a map, so that the rendezvous tests set launcher variables
// without touching the process's own environment.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "runtime/rendezvous/launch_env.h"

namespace fake_env {

using Vars = std::map<std::string, std::string>;

inline tutti::rendezvous::Environment fake(Vars vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto found = vars.find(name);
    if (found == vars.end()) return std::nullopt;
    return found->second;
  };
}

}  // namespace fake_env
