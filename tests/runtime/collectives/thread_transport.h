// An in-process Transport for the collectives' tests: ranks are threads of one
// process, and a World holds their mailboxes. A send is matched with a receive by
// (source, tag), in the order each side posted them, as transport.h promises. The
// data is copied when the two meet, not when the send is posted, so a send stays
// pending until its receiver shows up (as a large UCX message does): an algorithm that
// reuses a send buffer before wait(), or whose ranks wait on each other's sends, fails
// here too. Header-only, because tests/CMakeLists.txt builds each test_*.cc alone.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/transport/transport.h"

namespace thread_transport {

// What a Request* handed out by ThreadTransport points to. The transport's Request
// stays incomplete here (the UCX transport owns that definition); this type is
// converted to and from it.
struct Posted {
  Posted(int poster, int other, tutti::transport::Tag posted_tag, bool receive, const void* source, void* destination,
         size_t size)
      : rank(poster),
        peer(other),
        tag(key(posted_tag)),
        check(posted_tag.check & tutti::transport::kCheckMask),
        is_recv(receive),
        send_data(source),
        recv_data(destination),
        bytes(size) {}

  // What matching compares: everything but the check, as transport.h says.
  static uint64_t key(tutti::transport::Tag tag) {
    return (static_cast<uint64_t>(tag.space) << 32) | static_cast<uint64_t>(tag.value);
  }

  int rank;  // the rank that posted it
  int peer;
  uint64_t tag;
  uint16_t check;
  bool is_recv;
  const void* send_data;
  void* recv_data;
  size_t bytes;
  bool queued = false;  // waiting in a mailbox for its other half
  bool complete = false;
  size_t received = 0;
  tutti::Status error = tutti::Status::kOk;
  std::string error_message;
};

// The ranks' mailboxes, shared by one ThreadTransport per rank. One mutex guards all
// of it: the tests move little data, and one lock keeps the matching obviously right.
class World {
 public:
  explicit World(int size) : ranks_(static_cast<size_t>(size)) {}
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  int size() const { return static_cast<int>(ranks_.size()); }
  // Requests posted and not yet released, on every rank: 0 once every operation has
  // cleaned up after itself, failed ones included.
  int live_requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_;
  }

 private:
  friend class ThreadTransport;

  struct Mailbox {
    std::deque<Posted*> sends;  // sends addressed to this rank, not yet received
    std::deque<Posted*> recvs;  // receives this rank posted, not yet matched
    std::condition_variable activity_changed;
    bool activity = false;
    bool interrupted = false;
  };

  void signal_locked(int rank) {
    ranks_[static_cast<size_t>(rank)].activity = true;
    ranks_[static_cast<size_t>(rank)].activity_changed.notify_all();
  }

  // Copies the message and completes both halves; a message longer than the receive
  // buffer fails the receive, as a real transport's truncation does.
  void match_locked(Posted* send, Posted* recv) {
    if (send->bytes > recv->bytes) {
      recv->error = tutti::Status::kInvalidArgument;
      recv->error_message = tutti::concat("a message of ", send->bytes, " bytes from rank ", send->rank,
                                          " is longer than the ", recv->bytes, "-byte receive buffer");
    } else if (send->check != recv->check) {
      recv->error = tutti::Status::kMismatch;
      recv->error_message = tutti::concat("rank ", send->rank, " sent a message for another call (check ", send->check,
                                          ", this receive's ", recv->check, ")");
    } else {
      if (send->bytes != 0) std::memcpy(recv->recv_data, send->send_data, send->bytes);
      recv->received = send->bytes;
    }
    send->queued = recv->queued = false;
    send->complete = recv->complete = true;
    signal_locked(send->rank);
    signal_locked(recv->rank);
  }

  static Posted* take_first_locked(std::deque<Posted*>& queue, int from, uint64_t tag) {
    auto found = std::find_if(queue.begin(), queue.end(), [&](const Posted* p) {
      return p->tag == tag && (p->is_recv ? p->peer : p->rank) == from;
    });
    if (found == queue.end()) return nullptr;
    Posted* posted = *found;
    queue.erase(found);
    return posted;
  }

  std::mutex mutex_;
  std::vector<Mailbox> ranks_;
  int live_ = 0;
};

class ThreadTransport : public tutti::transport::Transport {
 public:
  ThreadTransport(World& world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_.size(); }

  tutti::transport::Request* post_send(int peer, tutti::transport::Tag tag, const void* data, size_t bytes) override {
    check_peer(peer);
    auto* send = new Posted(rank_, peer, tag, false, data, nullptr, bytes);
    std::lock_guard<std::mutex> lock(world_.mutex_);
    ++world_.live_;
    auto& box = world_.ranks_[static_cast<size_t>(peer)];
    if (Posted* recv = World::take_first_locked(box.recvs, rank_, send->tag)) {
      // Its receiver was there: it completed as it was posted, which transport.h lets
      // post_send say with a null request (UCX's small sends do), so that the tests
      // run the collectives' handling of it.
      world_.match_locked(send, recv);
      --world_.live_;
      delete send;
      return nullptr;
    } else {
      send->queued = true;
      box.sends.push_back(send);
      world_.signal_locked(peer);
    }
    return handle(send);
  }

  tutti::transport::Request* post_recv(int peer, tutti::transport::Tag tag, void* data, size_t bytes) override {
    check_peer(peer);
    auto* recv = new Posted(rank_, peer, tag, true, nullptr, data, bytes);
    std::lock_guard<std::mutex> lock(world_.mutex_);
    ++world_.live_;
    auto& box = world_.ranks_[static_cast<size_t>(rank_)];
    if (Posted* send = World::take_first_locked(box.sends, peer, recv->tag)) {
      world_.match_locked(send, recv);
    } else {
      recv->queued = true;
      box.recvs.push_back(recv);
    }
    return handle(recv);
  }

  // Matching happens when the second half is posted, so there is nothing to move.
  bool progress() override { return false; }

  bool done(tutti::transport::Request* request) override {
    if (request == nullptr) return true;
    std::lock_guard<std::mutex> lock(world_.mutex_);
    Posted* posted = from_handle(request);
    if (posted->error != tutti::Status::kOk) tutti::fail(posted->error, posted->error_message);
    return posted->complete;
  }

  size_t received_bytes(tutti::transport::Request* request) override {
    std::lock_guard<std::mutex> lock(world_.mutex_);
    return from_handle(request)->received;
  }

  void release(tutti::transport::Request* request) override {
    if (request == nullptr) return;
    Posted* posted = from_handle(request);
    {
      std::lock_guard<std::mutex> lock(world_.mutex_);
      --world_.live_;
      if (posted->queued) {
        auto& box = world_.ranks_[static_cast<size_t>(posted->is_recv ? rank_ : posted->peer)];
        auto& queue = posted->is_recv ? box.recvs : box.sends;
        queue.erase(std::find(queue.begin(), queue.end(), posted));
      }
    }
    delete posted;
  }

  bool wait_for_activity(int timeout_ms) override {
    std::unique_lock<std::mutex> lock(world_.mutex_);
    auto& box = world_.ranks_[static_cast<size_t>(rank_)];
    const bool pending = box.activity || box.interrupted;
    box.activity_changed.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                  [&] { return box.activity || box.interrupted; });
    box.activity = false;
    box.interrupted = false;
    return !pending;
  }

  void interrupt() override {
    std::lock_guard<std::mutex> lock(world_.mutex_);
    auto& box = world_.ranks_[static_cast<size_t>(rank_)];
    box.interrupted = true;
    box.activity_changed.notify_all();
  }

  const char* describe() const override { return "threads (tests only)"; }

 private:
  static tutti::transport::Request* handle(Posted* posted) {
    return reinterpret_cast<tutti::transport::Request*>(posted);
  }
  static Posted* from_handle(tutti::transport::Request* request) { return reinterpret_cast<Posted*>(request); }

  void check_peer(int peer) const {
    if (peer < 0 || peer >= world_.size()) {
      tutti::fail(tutti::Status::kInvalidArgument,
                  tutti::concat("thread transport: rank ", rank_, " addressed rank ", peer, " of a world of ",
                                world_.size(), "; use a rank in [0, ", world_.size() - 1, "]"));
    }
  }

  World& world_;
  int rank_;
};

}  // namespace thread_transport
