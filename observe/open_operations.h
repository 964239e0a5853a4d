// The operations a rank's trace leaves open (B without its E, b without its e): a
// process that died in the middle of an all_reduce. Closing them keeps the merged file
// nested, as every viewer needs, and marks them UNFINISHED.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tutti::observe {

struct OpenOperations {
  // The E and e events that close them at end_us, innermost first on each track.
  std::vector<nlohmann::ordered_json> closing_events;
  // "all_reduce #42" (the name, and the seq argument where there is one), in the order
  // they began.
  std::vector<std::string> labels;
  // E events that closed nothing (a writer's bug), dropped from events.
  size_t stray_ends = 0;
};

// events: one rank's, in the order its writer wrote them.
OpenOperations close_open_operations(nlohmann::ordered_json& events, double end_us);

}  // namespace tutti::observe
