// What the store knows of the members of its groups, as ROSTER (protocol.h) returns
// it: one record per member, for `tutti top`, which shows a running job from outside.
// A rank declared lost is no longer a member; its loss event (loss_event.h) says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tutti::store {

struct RosterEntry {
  std::string prefix;      // the group's keys
  int64_t rank = -1;       // in that group
  std::string identity;    // "host:pid", from its HELLO
  int64_t silent_ms = 0;   // since the store last heard from it (its heartbeats, any request)
  int64_t timeout_ms = 0;  // its heartbeat timeout; 0: not watched (it left, or has not begun)
  std::string activity;    // what it last reported doing (health/activity_board.h), "" if nothing yet
};

std::string encode(const RosterEntry& entry);
// nullopt for a value that is not an encoded entry.
std::optional<RosterEntry> decode_roster_entry(const std::string& value);

}  // namespace tutti::store
