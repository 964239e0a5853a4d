#include "runtime/store/loss_event.h"

#include <cstdlib>
#include <vector>

#include "runtime/common/concat.h"

namespace tutti::store {
namespace {

// Fields are separated by a byte that none of them holds: identities, addresses and
// reasons are text, and activities are the board's "<seq> <running> <ms> <name>".
constexpr char kSeparator = '\x1f';
constexpr size_t kFields = 6;

std::optional<int64_t> parse_int(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

}  // namespace

std::string lost_count_key(const std::string& prefix) { return concat(prefix, "lost/count"); }
std::string lost_key(const std::string& prefix, int64_t n) { return concat(prefix, "lost/", n); }
std::string lost_rank_key(const std::string& prefix, int64_t rank) { return concat(prefix, "lost/rank/", rank); }
std::string activity_key(const std::string& prefix, int64_t rank) { return concat(prefix, "activity/", rank); }

std::string encode(const LossEvent& event) {
  return concat(event.rank, kSeparator, event.identity, kSeparator, event.address, kSeparator, event.reason, kSeparator,
                event.activity, kSeparator, event.activity_age_ms);
}

std::optional<LossEvent> decode_loss_event(const std::string& value) {
  std::vector<std::string> fields(1);
  for (char c : value) {
    if (c == kSeparator) {
      fields.emplace_back();
    } else {
      fields.back().push_back(c);
    }
  }
  if (fields.size() != kFields) return std::nullopt;
  auto rank = parse_int(fields[0]);
  auto age = parse_int(fields[5]);
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
