#include "runtime/store/relay.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/common/wall_clock.h"

namespace tutti::store {

using protocol::Op;
using protocol::Reply;
using protocol::Request;

std::shared_ptr<Upstream> Upstream::connect(const std::shared_ptr<loop::Loop>& loop, const RelaySetup& setup,
                                            Deadline deadline) {
  auto client = Client::connect(loop, setup.store_host, setup.store_port, deadline, setup.secret);
  return std::make_shared<Upstream>(std::move(client), setup);
}

void Upstream::send(Request request, std::function<void(const Reply&)> then) {
  std::string what = concat(protocol::op_name(request.op), request.keys.empty() ? "" : " \"",
                            request.keys.empty() ? "" : request.keys[0], request.keys.empty() ? "" : "\"");
  client_->request_async(
      std::move(request), [this, what, then = std::move(then)](const Reply& reply, bool connection_lost) {
        if (closed_) return;
        if (connection_lost) return lost(reply.message);
        if (reply.status != Status::kOk) {
          log::error("rendezvous relay: the store at ", address(), " refused ", what, ": ", reply.message);
          return;
        }
        if (then) then(reply);
      });
}

void Upstream::set(const std::string& key, const std::string& value) {
  Request request;
  request.op = Op::kSet;
  request.keys = {key};
  request.value = value;
  send(std::move(request), {});
}

void Upstream::add(const std::string& key, int64_t delta, std::function<void(int64_t)> then) {
  Request request;
  request.op = Op::kAdd;
  request.keys = {key};
  request.number = delta;
  send(std::move(request), [then = std::move(then)](const Reply& reply) { then(reply.number); });
}

void Upstream::watched(const std::string& prefix, int64_t rank, bool joined) {
  Request request;
  request.op = joined ? Op::kRelayJoin : Op::kRelayLeave;
  request.keys = {prefix};
  request.number = rank;
  send(std::move(request), {});
}

void Upstream::forward(Request request, Client::Answered done) {
  client_->request_async(std::move(request), [this, done = std::move(done)](const Reply& reply, bool connection_lost) {
    if (closed_) return;
    done(reply, connection_lost);
    if (connection_lost) lost(reply.message);
  });
}

void Upstream::beat(size_t ranks) {
  Request request;
  request.op = Op::kHeartbeat;
  request.number = setup_.heartbeat_timeout_ms;
  request.value = concat("relaying for ", ranks, " ranks");
  request.with_value = true;
  int64_t sent_us = wall_clock_us();
  send(std::move(request), [this, sent_us](const Reply& reply) {
    if (!reply.with_value || reply.values.empty()) return;
    // The store read its clock about halfway through the round trip.
    int64_t now_us = wall_clock_us();
    clock_offset_us_ = std::strtoll(reply.values[0].c_str(), nullptr, 10) - (sent_us + now_us) / 2;
  });
}

int64_t Upstream::store_clock_us() const { return wall_clock_us() + clock_offset_us_.load(); }

void Upstream::close() { closed_ = true; }

Upstream::~Upstream() {
  closed_ = true;
  client_.reset();
}

void Upstream::lost(const std::string& why) {
  if (lost_) return;
  lost_ = true;
  log::error("rendezvous relay: lost its store at ", address(), ": ", why, "; closing the connections of its ranks");
  if (on_lost_) on_lost_(why);
}

SharedGets::Join SharedGets::join(const std::string& key, const Asker& asker) {
  auto it = gets_.find(key);
  if (it == gets_.end()) {
    gets_[key] = Shared{asker.deadline_ms, {asker}};
    return Join::kAskUp;
  }
  if (asker.deadline_ms < it->second.deadline_ms) return Join::kAlone;
  it->second.askers.push_back(asker);
  return Join::kJoined;
}

std::vector<SharedGets::Asker> SharedGets::answered(const std::string& key) {
  auto it = gets_.find(key);
  if (it == gets_.end()) return {};
  std::vector<Asker> askers = std::move(it->second.askers);
  gets_.erase(it);
  return askers;
}

std::vector<SharedGets::Asker> SharedGets::timed_out(const std::string& key, uint64_t now_ms, uint64_t* next) {
  *next = 0;
  auto it = gets_.find(key);
  if (it == gets_.end()) return {};
  std::vector<Asker> due;
  std::vector<Asker> waiting;
  for (const Asker& asker : it->second.askers) {
    (asker.deadline_ms <= now_ms + asker.slack_ms ? due : waiting).push_back(asker);
  }
  if (waiting.empty()) {
    gets_.erase(it);
    return due;
  }
  uint64_t earliest = waiting.front().deadline_ms;
  for (const Asker& asker : waiting) earliest = std::min(earliest, asker.deadline_ms);
  it->second = Shared{earliest, std::move(waiting)};
  *next = earliest;
  return due;
}

std::unique_ptr<Server> start_relay(const std::shared_ptr<loop::Loop>& loop, const RelaySetup& setup,
                                    Deadline deadline) {
  auto upstream = Upstream::connect(loop, setup, deadline);
  return Server::start(loop, setup.host, setup.port, setup.limits, setup.secret, std::move(upstream));
}

}  // namespace tutti::store
