#include "runtime/store/heartbeat_settings.h"

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/settings.h"

namespace tutti::store {

void read_heartbeat_settings(int64_t* interval_ms, int64_t* timeout_ms) {
  *interval_ms = settings::integer("TUTTI_HEARTBEAT_INTERVAL_MS", 10, 3600 * 1000).value_or(1000);
  *timeout_ms = settings::integer("TUTTI_HEARTBEAT_TIMEOUT_MS", 20, 24 * 3600 * 1000).value_or(20000);
  if (*timeout_ms < 2 * *interval_ms) {
    fail(Status::kInvalidArgument,
         concat("TUTTI_HEARTBEAT_TIMEOUT_MS (", *timeout_ms, ") is under two heartbeat intervals (",
                "TUTTI_HEARTBEAT_INTERVAL_MS = ", *interval_ms, "), so one late heartbeat would declare a healthy ",
                "rank lost; raise the timeout or shorten the interval"));
  }
}

}  // namespace tutti::store
