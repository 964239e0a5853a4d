// The narrow interface between the collectives and a point-to-point transport (UCX
// today; STYLE G3). One Transport serves one communicator: it knows the communicator's
// ranks, and a message is matched by (source rank, tag) within it. Messages from one
// rank to another under the same tag are received in the order they were sent.
//
// Threads: one thread at a time calls a Transport (the communicator's executor lock
// guarantees it), except interrupt(), which any thread may call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/work/armed.h"

namespace tutti::transport {

// Collectives tag their messages with the operation's sequence number; user
// point-to-point (tutti_send/tutti_recv) with the user's tag. The two never match.
enum class TagSpace : uint8_t { kCollective = 0, kUser = 1 };

// A receive takes the next message of its (source, space, value) whatever the sender's
// check, and fails with kMismatch when the two differ (UCX's transport matches on the
// check too, and takes a message with another one when it has waited a while for its
// own: worker_transport.h).
// Collectives carry their call's folded fingerprint there, so that ranks that disagree
// on a call are told so by the very messages the algorithm sends, at no cost.
constexpr int kCheckBits = 11;
constexpr uint16_t kCheckMask = (1u << kCheckBits) - 1;

// In this order, 8 bytes that the compiler packs into one register when a Tag is passed
// by value. With space first (12 bytes), GCC wrote the fields to the stack one by one
// and read them back whole, which the store buffer cannot forward: a stall that took
// 7% of a small receive's time.
struct Tag {
  uint32_t value;
  uint16_t check = 0;  // only the low kCheckBits bits travel
  TagSpace space;
};
static_assert(sizeof(Tag) == 8, "Tag must fit one register");

// A posted send or receive; owned by the transport, handed back with release().
struct Request;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The communicator's rank of `peer`, for messages: the same, except on a transport
  // over some of the communicator's ranks (collectives/subset_transport.h).
  virtual int communicator_rank(int peer) const { return peer; }

  // Start sending `bytes` bytes to `peer` / receiving at most `bytes` bytes from
  // `peer`. Never block. The buffer belongs to the transport until the request is done
  // or released. peer may be this rank (a message to itself). post_send returns null
  // for a send that completed as it was posted (its buffer is the caller's again):
  // there is nothing to wait for, done(nullptr) is true and release(nullptr) does
  // nothing.
  virtual Request* post_send(int peer, Tag tag, const void* data, size_t bytes) = 0;
  virtual Request* post_recv(int peer, Tag tag, void* data, size_t bytes) = 0;

  // Moves every request forward without blocking; true if anything happened.
  virtual bool progress() = 0;

  // Whether the request has completed. Throws Error when it failed: kInvalidArgument
  // when the arriving message is longer than the receive buffer (the message names
  // both sizes), kMismatch when the sender's Tag::check differs from the receive's,
  // kPeerLost when the peer's connection is gone, kTransport otherwise.
  virtual bool done(Request* request) = 0;
  // For a completed receive: how many bytes arrived.
  virtual size_t received_bytes(Request* request) = 0;
  // Gives the request back, cancelling it if it has not completed. Safe on any state.
  virtual void release(Request* request) = 0;
  // done(), then for a completed request received_bytes() and release() in one call,
  // as a step's wait needs them: true when it completed, its bytes in *received (pass
  // null for a send) and the request given back. Throws as done() does, leaving the
  // request to the caller to release.
  virtual bool finish(Request* request, size_t* received) {
    if (!done(request)) return false;
    if (received != nullptr) *received = received_bytes(request);
    release(request);
    return true;
  }

  // Blocks until the transport may have something new (an arriving message, a
  // completion) or timeout_ms passes, whichever is first, without burning the core
  // (blocking waits call it after a short spin so that oversubscribed ranks yield).
  // Returns false, at once, when there was something to progress already.
  virtual bool wait_for_activity(int timeout_ms) = 0;
  // Wakes a thread blocked in wait_for_activity or wait_armed. Any thread; never blocks.
  virtual void interrupt() = 0;

  // wait_for_activity in two halves, for a thread that must not hold the transport
  // while it sleeps, since another thread may drive it meanwhile (a communicator's
  // executor, moving what is in flight while the user's thread computes): arm() with
  // the transport held, then wait_armed() without.
  using Armed = work::Armed;
  virtual Armed arm() { return Armed::kUnsupported; }
  // Blocks until the transport, armed, has news, interrupt() is called, or timeout_ms
  // passes; a spurious return is allowed. Any thread, the transport not held.
  virtual void wait_armed(int timeout_ms) { (void)timeout_ms; }

  // Whether a send this transport calls done may still have bytes in the process,
  // which only a later progress() writes out (UCX over TCP: its endpoint's buffer, when
  // the socket was full). Its owner then keeps progressing it while it waits on
  // anything else, so that a peer waiting for those bytes is never stuck on this rank.
  virtual bool sends_may_linger() const { return false; }

  // "ucx (tcp, posix, cma)": what carries the messages, for logs and tutti info.
  virtual const char* describe() const = 0;
};

}  // namespace tutti::transport
