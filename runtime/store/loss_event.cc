#include "runtime/store/loss_event.h"

#include "runtime/common/concat.h"
#include "runtime/store/fields.h"

namespace tutti::store {
namespace {

constexpr size_t kFields = 6;

}  // namespace

std::string lost_count_key(const std::string& prefix) { return concat(prefix, "lost/count"); }
std::string lost_key(const std::string& prefix, int64_t n) { return concat(prefix, "lost/", n); }
std::string lost_rank_key(const std::string& prefix, int64_t rank) { return concat(prefix, "lost/rank/", rank); }
std::string activity_key(const std::string& prefix, int64_t rank) { return concat(prefix, "activity/", rank); }

std::string encode(const LossEvent& event) {
  return concat(event.rank, kFieldSeparator, event.identity, kFieldSeparator, event.address, kFieldSeparator,
                event.reason, kFieldSeparator, event.activity, kFieldSeparator, event.activity_age_ms);
}

std::optional<LossEvent> decode_loss_event(const std::string& value) {
  std::vector<std::string> fields = split_fields(value);
  if (fields.size() != kFields) return std::nullopt;
  auto rank = parse_field_int(fields[0]);
  auto age = parse_field_int(fields[5]);
  if (!rank || !age) return std::nullopt;
  LossEvent event;
  event.rank = *rank;
  event.identity = fields[1];
  event.address = fields[2];
  event.reason = fields[3];
  event.activity = fields[4];
  event.activity_age_ms = *age;
  return event;
}

}  // namespace tutti::store
