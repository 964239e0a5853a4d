// How often a watched process sends a heartbeat, and after how much silence it is
// lost: what a rank's failure detector (health/monitor.h) and a relay (relay.h) both
// follow, from TUTTI_HEARTBEAT_INTERVAL_MS and TUTTI_HEARTBEAT_TIMEOUT_MS.
#pragma once

#include <cstdint>

namespace tutti::store {

// Checked: throws Error(kInvalidArgument) for a value out of range, or a timeout under
// two intervals.
void read_heartbeat_settings(int64_t* interval_ms, int64_t* timeout_ms);

}  // namespace tutti::store
