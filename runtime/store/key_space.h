// The store's state without its I/O: keys and values, the limits on them, and the
// requests parked until keys appear or their deadline passes. The server owns one and
// uses it on the loop thread only; it has no lock of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/store/protocol.h"
#include "runtime/store/server.h"

namespace tutti::store {

// A GET, WAIT or MULTI_GET that found keys missing.
struct Waiter {
  void* owner = nullptr;  // the connection that asked
  protocol::Request request;
  size_t missing = 0;        // distinct keys not yet seen since parking
  uint64_t deadline_ms = 0;  // on the loop's clock
  std::multimap<uint64_t, Waiter*>::iterator deadline_entry;
};

class KeySpace {
 public:
  // Called for each parked waiter whose keys are all there (or one, for WAIT any), after
  // it has left every index; the callee answers it and takes ownership.
  using Ready = std::function<void(std::unique_ptr<Waiter>)>;

  KeySpace(const ServerLimits& limits, Ready ready) : limits_(limits), ready_(std::move(ready)) {}

  // Answers request now, or returns nullopt when it must wait: then the caller parks it.
  // Errors come back as a reply with a status, never as an exception.
  std::optional<protocol::Reply> handle(const protocol::Request& request);

  // Registers a waiter returned nullopt by handle(); deadline on the loop's clock.
  Waiter* park(void* owner, const protocol::Request& request, uint64_t deadline_ms);
  // Removes a waiter from every index (its connection closed) and frees it.
  void drop(Waiter* waiter);
  // Removes and returns every waiter whose deadline is at or before now_ms.
  std::vector<std::unique_ptr<Waiter>> take_expired(uint64_t now_ms);
  std::optional<uint64_t> next_deadline() const;
  // Every parked waiter, removed (the server is closing).
  std::vector<std::unique_ptr<Waiter>> take_all();

  // The answer to a waiter whose keys are there; kTimeout when called on expiry.
  protocol::Reply answer(const Waiter& waiter, Status status) const;

  size_t keys() const { return values_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  std::optional<std::string> check_key(const std::string& key) const;
  std::optional<std::string> check_value(const std::string& value) const;
  // Stores value at key within the key and byte limits; nullopt or why not.
  std::optional<std::string> store(const std::string& key, const std::string& value);
  // Whether every pair of a MULTI_SET fits the limits together (nullopt), or why not:
  // checked before any is stored, so that a MULTI_SET is stored whole or not at all.
  std::optional<std::string> fits(const protocol::Request& request) const;
  void wake(const std::string& key);
  void unindex(Waiter* waiter);
  bool satisfied(const Waiter& waiter) const;
  void reindex(Waiter* waiter);
  protocol::Reply ok(const protocol::Request& request) const;
  protocol::Reply error(const protocol::Request& request, Status status, const std::string& why) const;

  ServerLimits limits_;
  Ready ready_;
  std::unordered_map<std::string, std::string> values_;
  size_t bytes_ = 0;
  // Key -> the waiters still missing it. Setting a key wakes only its own entry.
  std::unordered_map<std::string, std::unordered_set<Waiter*>> parked_;
  std::multimap<uint64_t, Waiter*> deadlines_;
  std::unordered_map<Waiter*, std::unique_ptr<Waiter>> waiters_;
};

}  // namespace tutti::store
