#include "observe/rank_clock.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tutti::observe {

std::optional<RankClock> read_rank_clock(const nlohmann::ordered_json& events) {
  std::optional<RankClock> clock;
  for (const auto& event : events) {
    if (event.value("ph", std::string()) != "M" || !event.contains("args") || !event["args"].is_object()) continue;
    const auto& args = event["args"];
    const std::string name = event.value("name", std::string());
    if (name == "tutti_epoch" && !clock && args.contains("epoch_us") && args["epoch_us"].is_number()) {
      clock.emplace();
      clock->epoch_us = args["epoch_us"].get<int64_t>();
      clock->rank = args.value("rank", event.value("pid", 0));
      clock->host = args.value("host", std::string());
      clock->pid = args.value("pid", int64_t{0});
    }
  }
  if (!clock) return clock;
  double best_rtt_us = std::numeric_limits<double>::infinity();
  for (const auto& event : events) {
    if (event.value("ph", std::string()) != "M" || event.value("name", std::string()) != "tutti_clock") continue;
    const auto& args = event.value("args", nlohmann::ordered_json::object());
    if (!args.contains("offset_us") || !args["offset_us"].is_number()) continue;
    // A measurement without its round trip is taken only when there is no other.
    const bool has_rtt = args.contains("rtt_us") && args["rtt_us"].is_number();
    const double rtt_us = has_rtt ? args["rtt_us"].get<double>() : std::numeric_limits<double>::max();
    if (rtt_us < best_rtt_us) {
      best_rtt_us = rtt_us;
      clock->offset_us = args["offset_us"].get<double>();
      clock->rtt_us = has_rtt ? std::optional<double>(rtt_us) : std::nullopt;
    }
  }
  // A sample places the store's clock within half its round trip of the offset it
  // gives; of those offsets, the one nearest zero is taken. Processes that share one
  // clock (one machine: emulated nodes included) then stay exactly on it, which the
  // midpoint would move by up to half a round trip, enough for a busy machine's
  // heartbeat (near a millisecond while a job starts) to show a receive ending before
  // its send began.
  if (clock->rtt_us) {
    const double uncertainty = *clock->rtt_us / 2;
    const double magnitude = std::max(0.0, std::fabs(clock->offset_us) - uncertainty);
    clock->offset_us = std::copysign(magnitude, clock->offset_us);
  }
  return clock;
}

}  // namespace tutti::observe
