// One step at a time of a point-to-point algorithm: post sends and receives, then
// wait() for all of them. Exchange binds a Transport to one operation: it tags every
// message with the operation's sequence number, waits as transport_wait.h says (spin,
// yield, then block in the transport, so oversubscribed ranks give their core away),
// checks the abort flag and the deadline while it waits, and checks that every receive
// got exactly the bytes it expected: a shorter or longer message means the ranks
// disagree on the count, reported as kMismatch naming the peer and both sizes.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/operation/op_context.h"
#include "runtime/transport/transport.h"

namespace tutti::collectives {

class Exchange {
 public:
  Exchange(transport::Transport& transport, const OpContext& context);
  // Releases (cancels) whatever is still posted, e.g. after a failure.
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  const OpContext& context() const { return context_; }

  // Post; the buffers must stay valid until the next wait() returns. Zero bytes is a
  // real (empty) message, so both sides stay in step.
  void send(int peer, const void* data, size_t bytes);
  void recv(int peer, void* data, size_t bytes);
  // Waits for everything posted since the last wait(). Throws Error (kTimeout,
  // kAborted, kMismatch, kPeerLost, kTransport) naming the operation and the peer.
  void wait();
  // Waits for the first n requests posted since the last wait (a send that completed
  // as it was posted holds none, and does not count), leaving the later ones in
  // flight: a pipeline posts its next receive before it works on this one's data, so
  // that the next message lands in place instead of in the transport's buffers.
  void wait_first(size_t n);

 private:
  struct Posted {
    transport::Request* request;  // null once finished
    int peer;                     // the transport's; messages name transport_.communicator_rank(peer)
    size_t bytes;
    bool is_recv;
  };

  // Polls every posted request, giving back those that completed (their request
  // becomes null); returns the first one not yet done, or null when all are.
  // Rethrows a request's failure with the operation and the peer named, and throws
  // kMismatch when a receive got fewer bytes than it was posted for.
  const Posted* finish_completed();
  // Gives back (cancels) what is still held.
  void release_all();
  // Room for one more request, made before posting so that a posted request is never
  // lost to a failing allocation.
  void make_room() {
    if (count_ == capacity_) grow();
  }
  void grow();
  const Posted* begin() const { return posted_; }
  const Posted* end() const { return posted_ + count_; }

  // Most steps post a few requests (a ring's two, a tree's handful): they are held in
  // the Exchange itself, so that a small message's step allocates nothing (a vector's
  // allocation and free were a tenth of an 8-byte all_reduce over UCX's shared
  // memory). The linear algorithms' steps of many peers move to the heap.
  static constexpr size_t kHeldInline = 8;

  transport::Transport& transport_;
  const OpContext& context_;
  Posted held_inline_[kHeldInline];
  std::unique_ptr<Posted[]> held_on_heap_;
  Posted* posted_ = held_inline_;
  size_t count_ = 0;
  size_t capacity_ = kHeldInline;
};

}  // namespace tutti::collectives
