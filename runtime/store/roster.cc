#include "runtime/store/roster.h"

#include "runtime/common/concat.h"
#include "runtime/store/fields.h"

namespace tutti::store {

std::string encode(const RosterEntry& entry) {
  return concat(entry.prefix, kFieldSeparator, entry.rank, kFieldSeparator, entry.identity, kFieldSeparator,
                entry.silent_ms, kFieldSeparator, entry.timeout_ms, kFieldSeparator, entry.activity);
}

std::optional<RosterEntry> decode_roster_entry(const std::string& value) {
  std::vector<std::string> fields = split_fields(value);
  if (fields.size() != 6) return std::nullopt;
  auto rank = parse_field_int(fields[1]);
  auto silent = parse_field_int(fields[3]);
  auto timeout = parse_field_int(fields[4]);
  if (!rank || !silent || !timeout) return std::nullopt;
  RosterEntry entry;
  entry.prefix = fields[0];
  entry.rank = *rank;
  entry.identity = fields[2];
  entry.silent_ms = *silent;
  entry.timeout_ms = *timeout;
  entry.activity = fields[5];
  return entry;
}

}  // namespace tutti::store
