#include "runtime/store/key_space.h"

#include <cassert>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "runtime/common/concat.h"

namespace tutti::store {

using protocol::Op;
using protocol::Reply;
using protocol::Request;

namespace {

std::optional<int64_t> parse_integer(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

// Quoted and cut short, for messages that echo a peer's bytes.
std::string preview(const std::string& text) {
  constexpr size_t kMax = 40;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    char c = text[i];
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  out += text.size() > kMax ? "\"..." : "\"";
  return out;
}

}  // namespace

Reply KeySpace::ok(const Request& request) const {
  Reply reply;
  reply.op = request.op;
  reply.id = request.id;
  return reply;
}

Reply KeySpace::error(const Request& request, Status status, const std::string& why) const {
  Reply reply = ok(request);
  reply.status = status;
  reply.message = why;
  return reply;
}

std::optional<std::string> KeySpace::check_key(const std::string& key) const {
  if (key.empty()) return std::string("the key is empty; use a non-empty key");
  if (key.size() > limits_.max_key_bytes) {
    return concat("a key of ", key.size(), " bytes is over the store's max_key_bytes (", limits_.max_key_bytes,
                  "); use a shorter key or raise the limit");
  }
  return std::nullopt;
}

std::optional<std::string> KeySpace::check_value(const std::string& value) const {
  if (value.size() > limits_.max_value_bytes) {
    return concat("a value of ", value.size(), " bytes is over the store's max_value_bytes (", limits_.max_value_bytes,
                  "); store less or raise the limit");
  }
  return std::nullopt;
}

std::optional<std::string> KeySpace::fits(const Request& request) const {
  if (request.values.size() != request.keys.size()) {
    return concat("MULTI_SET has ", request.keys.size(), " keys but ", request.values.size(), " values");
  }
  // What the store would hold once every pair is in (a key given twice: its last value).
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < request.keys.size(); ++i) {
    if (auto why = check_value(request.values[i])) return why;
    last[request.keys[i]] = i;
  }
  size_t keys = values_.size(), total = bytes_;
  for (const auto& [key, i] : last) {
    auto it = values_.find(std::string(key));
    if (it == values_.end()) {
      ++keys;
    } else {
      total -= key.size() + it->second.size();
    }
    total += key.size() + request.values[i].size();
  }
  if (keys > limits_.max_keys) {
    return concat("the store would hold ", keys, " keys, over its max_keys (", limits_.max_keys,
                  "); delete keys that are no longer needed or raise the limit");
  }
  if (total > limits_.max_total_bytes) {
    return concat("the store would hold ", total, " bytes, over its max_total_bytes (", limits_.max_total_bytes,
                  "); delete keys that are no longer needed or raise the limit");
  }
  return std::nullopt;
}

std::optional<std::string> KeySpace::store(const std::string& key, const std::string& value) {
  if (auto why = check_value(value)) return why;
  auto it = values_.find(key);
  size_t old_bytes = it == values_.end() ? 0 : key.size() + it->second.size();
  size_t new_bytes = key.size() + value.size();
  if (it == values_.end() && values_.size() >= limits_.max_keys) {
    return concat("the store holds max_keys (", limits_.max_keys,
                  ") keys already; delete keys that are no longer needed or raise the limit");
  }
  size_t total = bytes_ - old_bytes + new_bytes;
  if (total > limits_.max_total_bytes) {
    return concat("the store would hold ", total, " bytes, over its max_total_bytes (", limits_.max_total_bytes,
                  "); delete keys that are no longer needed or raise the limit");
  }
  if (it == values_.end()) {
    values_.emplace(key, value);
  } else {
    it->second = value;
  }
  bytes_ = total;
  wake(key);
  return std::nullopt;
}

std::optional<Reply> KeySpace::handle(const Request& request) {
  for (const auto& key : request.keys) {
    if (auto why = check_key(key)) return error(request, Status::kInvalidArgument, *why);
  }
  Reply reply = ok(request);
  switch (request.op) {
    case Op::kHello:
      return error(request, Status::kInvalidArgument, "HELLO is only valid as a connection's first request");
    case Op::kHeartbeat:
    case Op::kMember:
    case Op::kRoster:
    case Op::kRelayJoin:
    case Op::kRelayLeave:
      return error(request, Status::kInvalidArgument,
                   concat(protocol::op_name(request.op), " is about the connection, not keys; the server handles it"));
    case Op::kSet:
      if (auto why = store(request.keys[0], request.value)) return error(request, Status::kInvalidArgument, *why);
      return reply;
    case Op::kMultiSet:
      if (auto why = fits(request)) return error(request, Status::kInvalidArgument, *why);
      for (size_t i = 0; i < request.keys.size(); ++i) store(request.keys[i], request.values[i]);
      return reply;
    case Op::kAdd: {
      int64_t current = 0;
      auto it = values_.find(request.keys[0]);
      if (it != values_.end()) {
        auto parsed = parse_integer(it->second);
        if (!parsed) {
          return error(request, Status::kInvalidArgument,
                       concat("the key holds ", preview(it->second),
                              ", not a decimal integer; add only to keys that are absent or hold one"));
        }
        current = *parsed;
      }
      int64_t delta = request.number;
      if ((delta > 0 && current > std::numeric_limits<int64_t>::max() - delta) ||
          (delta < 0 && current < std::numeric_limits<int64_t>::min() - delta)) {
        return error(request, Status::kInvalidArgument, concat("adding ", delta, " to ", current, " overflows int64"));
      }
      if (auto why = store(request.keys[0], std::to_string(current + delta))) {
        return error(request, Status::kInvalidArgument, *why);
      }
      reply.number = current + delta;
      return reply;
    }
    case Op::kCompareSet: {
      const std::string& key = request.keys[0];
      // Checked whether or not it is stored, so that a caller learns of it at once.
      if (auto why = check_value(request.value)) return error(request, Status::kInvalidArgument, *why);
      auto it = values_.find(key);
      // An absent key compares as "", so "" expects the key to be absent (or empty).
      const std::string current = it == values_.end() ? std::string() : it->second;
      if (current == request.expected) {
        if (auto why = store(key, request.value)) return error(request, Status::kInvalidArgument, *why);
        reply.values.push_back(request.value);
      } else {
        reply.values.push_back(current);
      }
      return reply;
    }
    case Op::kCheck:
      reply.flags.reserve(request.keys.size());
      for (const auto& key : request.keys) reply.flags.push_back(values_.count(key) != 0);
      return reply;
    case Op::kDelete: {
      auto it = values_.find(request.keys[0]);
      reply.number = it != values_.end();
      if (it != values_.end()) {
        bytes_ -= it->first.size() + it->second.size();
        values_.erase(it);
      }
      return reply;
    }
    case Op::kGet:
    case Op::kWait:
    case Op::kMultiGet: {
      if (request.op == Op::kWait && request.wait_any && request.keys.empty()) {
        return error(request, Status::kInvalidArgument, "wait_any needs at least one key");
      }
      Waiter probe;
      probe.request = request;
      if (satisfied(probe)) return answer(probe, Status::kOk);
      if (request.number <= 0) return answer(probe, Status::kTimeout);
      return std::nullopt;
    }
  }
  return error(request, Status::kInvalidArgument, "unknown request");
}

bool KeySpace::satisfied(const Waiter& waiter) const {
  const auto& keys = waiter.request.keys;
  if (waiter.request.wait_any) {
    for (const auto& key : keys) {
      if (values_.count(key) != 0) return true;
    }
    return false;
  }
  for (const auto& key : keys) {
    if (values_.count(key) == 0) return false;
  }
  return true;
}

Reply KeySpace::answer(const Waiter& waiter, Status status) const {
  const Request& request = waiter.request;
  if (status != Status::kOk) {
    std::string why = status == Status::kTimeout ? concat("timed out after ", request.number, " ms")
                                                 : std::string("the rendezvous store is shutting down");
    return error(request, status, why);
  }
  Reply reply = ok(request);
  switch (request.op) {
    case Op::kGet: reply.values.push_back(values_.at(request.keys[0])); break;
    case Op::kWait:
      reply.number = 0;
      if (request.wait_any) {
        for (size_t i = 0; i < request.keys.size(); ++i) {
          auto it = values_.find(request.keys[i]);
          if (it == values_.end()) continue;
          reply.number = static_cast<int64_t>(i);
          if (request.with_value) {
            reply.with_value = true;
            reply.values.push_back(it->second);
          }
          break;
        }
      }
      break;
    case Op::kMultiGet: {
      size_t total = protocol::kHeaderBytes + 64;
      for (const auto& key : request.keys) total += 4 + values_.at(key).size();
      if (total > limits_.max_frame_bytes) {
        return error(request, Status::kInvalidArgument,
                     concat("the values of these ", request.keys.size(), " keys take ", total,
                            " bytes, over the store's max_frame_bytes (", limits_.max_frame_bytes,
                            "); get fewer keys at a time or raise the limit"));
      }
      reply.values.reserve(request.keys.size());
      for (const auto& key : request.keys) reply.values.push_back(values_.at(key));
      break;
    }
    default: break;
  }
  return reply;
}

void KeySpace::reindex(Waiter* waiter) {
  waiter->missing = 0;
  std::unordered_set<std::string_view> seen;
  for (const auto& key : waiter->request.keys) {
    if (values_.count(key) != 0 || !seen.insert(key).second) continue;
    parked_[key].insert(waiter);
    ++waiter->missing;
  }
}

Waiter* KeySpace::park(void* owner, const Request& request, uint64_t deadline_ms) {
  auto owned = std::make_unique<Waiter>();
  Waiter* waiter = owned.get();
  waiter->owner = owner;
  waiter->request = request;
  waiter->deadline_ms = deadline_ms;
  waiter->deadline_entry = deadlines_.emplace(deadline_ms, waiter);
  waiters_.emplace(waiter, std::move(owned));
  reindex(waiter);
  return waiter;
}

void KeySpace::unindex(Waiter* waiter) {
  for (const auto& key : waiter->request.keys) {
    auto it = parked_.find(key);
    if (it == parked_.end()) continue;
    it->second.erase(waiter);
    if (it->second.empty()) parked_.erase(it);
  }
  deadlines_.erase(waiter->deadline_entry);
}

void KeySpace::drop(Waiter* waiter) {
  auto it = waiters_.find(waiter);
  assert(it != waiters_.end());
  if (it == waiters_.end()) return;
  unindex(waiter);
  waiters_.erase(it);
}

void KeySpace::wake(const std::string& key) {
  auto it = parked_.find(key);
  if (it == parked_.end()) return;
  std::unordered_set<Waiter*> woken = std::move(it->second);
  parked_.erase(it);
  std::vector<std::unique_ptr<Waiter>> ready;
  for (Waiter* waiter : woken) {
    if (!waiter->request.wait_any && --waiter->missing > 0) continue;
    // A key counted as seen may have been deleted since; then wait for it again.
    if (!satisfied(*waiter)) {
      reindex(waiter);
      continue;
    }
    unindex(waiter);
    auto owned = waiters_.find(waiter);
    ready.push_back(std::move(owned->second));
    waiters_.erase(owned);
  }
  // Answered after the walk, so that nothing the callee does can touch the sets above.
  for (auto& waiter : ready) ready_(std::move(waiter));
}

std::vector<std::unique_ptr<Waiter>> KeySpace::take_expired(uint64_t now_ms) {
  std::vector<std::unique_ptr<Waiter>> expired;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now_ms) {
    Waiter* waiter = deadlines_.begin()->second;
    unindex(waiter);
    auto owned = waiters_.find(waiter);
    expired.push_back(std::move(owned->second));
    waiters_.erase(owned);
  }
  return expired;
}

std::optional<uint64_t> KeySpace::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

std::vector<std::unique_ptr<Waiter>> KeySpace::take_all() {
  std::vector<std::unique_ptr<Waiter>> all;
  all.reserve(waiters_.size());
  for (auto& [waiter, owned] : waiters_) all.push_back(std::move(owned));
  waiters_.clear();
  parked_.clear();
  deadlines_.clear();
  return all;
}

}  // namespace tutti::store
