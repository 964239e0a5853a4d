#include "runtime/collectives/exchange.h"

#include <algorithm>
#include <atomic>

#include "runtime/collectives/transport_wait.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::collectives {
namespace {

constexpr const char* kHowToFix =
    "the ranks called it with different counts; pass the same count, dtype and root on every rank "
    "(TUTTI_CHECK=1 names the fields that differ)";

// What to fix when a message's size differs from its receive's.
const char* how_to_fix(const OpContext& context) {
  if (std::string_view(context.name) != "all_to_allv") return kHowToFix;
  return "the ranks disagree on a block's size: what rank i sends rank j (its send_counts[j]) must be what rank j "
         "expects from rank i (its recv_counts[i])";
}

// Whether OpContext::check has something to do now: the communicator's fault is
// raised, or its alarm (the deadline, or a report of a long wait) has gone off. Both
// are cheap enough for every turn of a wait: a relaxed load, and the coarse clock.
bool must_check(const OpContext& context) {
  return (context.fault != nullptr && context.fault->raised()) || context.alarm.expired_coarse();
}

}  // namespace

Exchange::Exchange(transport::Transport& transport, const OpContext& context)
    : transport_(transport), context_(context) {}

Exchange::~Exchange() { release_all(); }

void Exchange::send(int peer, const void* data, size_t bytes) {
  make_room();
  transport::Request* request = transport_.post_send(
      peer,
      transport::Tag{.value = context_.seq, .check = context_.call_check, .space = transport::TagSpace::kCollective},
      data, bytes);
  if (request == nullptr) return;  // it completed as it was posted: nothing to wait for
  posted_[count_++] = Posted{request, peer, bytes, false};
}

void Exchange::recv(int peer, void* data, size_t bytes) {
  make_room();
  transport::Request* request = transport_.post_recv(
      peer,
      transport::Tag{.value = context_.seq, .check = context_.call_check, .space = transport::TagSpace::kCollective},
      data, bytes);
  posted_[count_++] = Posted{request, peer, bytes, true};
}

void Exchange::grow() {
  // Doubling, so that posting P requests moves them log P times.
  auto larger = std::make_unique<Posted[]>(2 * capacity_);
  std::copy(begin(), end(), larger.get());
  held_on_heap_ = std::move(larger);
  posted_ = held_on_heap_.get();
  capacity_ *= 2;
}

void Exchange::wait() {
  if (count_ == 0) return;  // a tree's leaf waits on its sends to no children, etc.
  TransportWait waiting(transport_);
  // Completion is looked at before progress: a receive whose message had arrived is
  // done when posted, and a progress that finds nothing costs as much as the rest of a
  // small message's path.
  for (;;) {
    const Posted* incomplete = finish_completed();
    if (incomplete == nullptr) break;
    // Naming the peer takes a string; build it only when check() has something to
    // do, so that the waiting loop itself never allocates.
    if (must_check(context_)) {
      const int peer = transport_.communicator_rank(incomplete->peer);
      context_.check(incomplete->is_recv ? concat("rank ", peer, "'s data").c_str()
                                         : concat("rank ", peer, " to take this rank's data").c_str());
    }
    waiting.step();
  }
  count_ = 0;
}

void Exchange::wait_first(size_t n) {
  const size_t later = count_ - n;
  count_ = n;
  try {
    wait();
  } catch (...) {
    // Nothing was released: the destructor releases all of them.
    count_ = n + later;
    throw;
  }
  std::move(posted_ + n, posted_ + n + later, posted_);
  count_ = later;
}

const Exchange::Posted* Exchange::finish_completed() {
  const Posted* first = nullptr;
  for (Posted* posted = posted_; posted != posted_ + count_; ++posted) {
    if (posted->request == nullptr) continue;  // finished on an earlier turn
    size_t got = 0;
    bool done = false;
    try {
      done = transport_.finish(posted->request, posted->is_recv ? &got : nullptr);
    } catch (const Error& e) {
      // A message longer than the receive buffer can only mean the peer was called
      // with a larger count: report it as the disagreement it is.
      if (posted->is_recv && e.status() == Status::kInvalidArgument) {
        fail(Status::kMismatch,
             concat(context_.label(), ": rank ", transport_.communicator_rank(posted->peer), " sent more than the ",
                    posted->bytes, " bytes this rank expected (", e.what(), "): ", how_to_fix(context_)));
      }
      fail(e.status(), concat(context_.label(), ": ", posted->is_recv ? "receiving from" : "sending to", " rank ",
                              transport_.communicator_rank(posted->peer), ": ", e.what()));
    }
    if (!done) {
      if (first == nullptr) first = posted;
      continue;
    }
    posted->request = nullptr;
    if (posted->is_recv && got != posted->bytes) {
      fail(Status::kMismatch,
           concat(context_.label(), ": rank ", transport_.communicator_rank(posted->peer), " sent ", got,
                  " bytes where this rank expected ", posted->bytes, ": ", how_to_fix(context_)));
    }
  }
  return first;
}

void Exchange::release_all() {
  for (const Posted& posted : *this) {
    if (posted.request != nullptr) transport_.release(posted.request);
  }
  count_ = 0;
}

}  // namespace tutti::collectives
