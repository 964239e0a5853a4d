// Where a rank's trace sits in time: its epoch (tutti_epoch metadata, the wall clock
// when it started) and the best measured offset from its clock to the store's
// (tutti_clock metadata: the one measured over the shortest round trip, moved toward
// zero by half that round trip, its uncertainty, and no further than zero). Global
// time, on the store's clock, is epoch_us + offset_us + ts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tutti::observe {

struct RankClock {
  int64_t epoch_us = 0;
  int rank = 0;
  std::string host;
  int64_t pid = 0;
  double offset_us = 0;
  std::optional<double> rtt_us;  // none: no tutti_clock metadata (offset 0), or none with rtt_us
};

// Empty when events hold no tutti_epoch metadata (not a tutti trace, or one cut off
// before its third line).
std::optional<RankClock> read_rank_clock(const nlohmann::ordered_json& events);

}  // namespace tutti::observe
