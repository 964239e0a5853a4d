// An init given up from another thread (tutti.h's draft tutti_comm_init_start, then
// tutti_comm_abort or tutti_comm_destroy). Comm::init asks it between its steps and
// while it connects to the store; once it has a store client, cancelling shuts that
// client down, so that a wait for the other ranks ends at once. A PMIx exchange of the
// store's address is the one wait it cannot cut short: that ends at its own deadline.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "runtime/store/client.h"

namespace tutti::rendezvous {

class InitCancel {
 public:
  // Any thread, any time, more than once.
  void cancel(const std::string& why);
  bool requested() const { return requested_.load(std::memory_order_acquire); }
  // Throws Error(kAborted) saying why, once cancelled.
  void check() const;
  // For store::Client::connect and the file method's polling.
  std::function<bool()> predicate() const {
    return [this] { return requested(); };
  }
  // The store client the init waits on from now on (nullptr: none any more).
  void watch(store::Client* client);

 private:
  mutable std::mutex mutex_;
  std::atomic<bool> requested_{false};
  std::string why_;
  store::Client* client_ = nullptr;
};

}  // namespace tutti::rendezvous
