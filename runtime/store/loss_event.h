// A loss event: what the store writes when it declares a rank lost, and what every
// other rank of that rank's groups reads back to say who went and how. Keys, under the
// group's prefix:
//   lost/<n>        the n-th event of the group, n from 1 (lost/count holds n)
//   lost/rank/<r>   rank r's event, for whoever needs to know whether r is gone
//   activity/<r>    what rank r last reported doing (its heartbeats' activity)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tutti::store {

struct LossEvent {
  int64_t rank = -1;
  std::string identity;          // "host:pid", from the rank's HELLO
  std::string address;           // its connection's peer address, as the store saw it
  std::string reason;            // "its connection to the store closed", "sent no heartbeat for 10.2 s"
  std::string activity;          // its last reported activity (opaque to the store), "" if none
  int64_t activity_age_ms = -1;  // how long before the loss it reported it; -1 if never
};

std::string lost_count_key(const std::string& prefix);
std::string lost_key(const std::string& prefix, int64_t n);
std::string lost_rank_key(const std::string& prefix, int64_t rank);
std::string activity_key(const std::string& prefix, int64_t rank);

std::string encode(const LossEvent& event);
// nullopt for a value that is not an encoded event.
std::optional<LossEvent> decode_loss_event(const std::string& value);

}  // namespace tutti::store
