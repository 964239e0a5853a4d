// Some of a communicator's ranks seen as a communicator of their own, over the
// communicator's transport: rank i of the subset is rank members[i] of the whole.
// Hierarchical collectives (hierarchy.h) run their inter-node step through one: the
// ranks with this rank's local rank, one per node. Messages keep their tags, so the
// subset's operations match only the subset's, as long as its ranks exchange nothing
// else under the same operation's number.
#pragma once

#include <vector>

#include "runtime/transport/transport.h"

namespace tutti::collectives {

class SubsetTransport final : public transport::Transport {
 public:
  // whole outlives this; members are ranks of whole, this rank's among them.
  SubsetTransport(transport::Transport& whole, std::vector<int> members, int rank);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int communicator_rank(int peer) const override { return members_[peer]; }
  transport::Request* post_send(int peer, transport::Tag tag, const void* data, size_t bytes) override;
  transport::Request* post_recv(int peer, transport::Tag tag, void* data, size_t bytes) override;
  bool progress() override { return whole_.progress(); }
  bool done(transport::Request* request) override { return whole_.done(request); }
  size_t received_bytes(transport::Request* request) override { return whole_.received_bytes(request); }
  void release(transport::Request* request) override { whole_.release(request); }
  bool finish(transport::Request* request, size_t* received) override { return whole_.finish(request, received); }
  bool wait_for_activity(int timeout_ms) override { return whole_.wait_for_activity(timeout_ms); }
  void interrupt() override { whole_.interrupt(); }
  Armed arm() override { return whole_.arm(); }
  void wait_armed(int timeout_ms) override { whole_.wait_armed(timeout_ms); }
  const char* describe() const override { return whole_.describe(); }

 private:
  int member(int peer, const char* call) const;

  transport::Transport& whole_;
  const std::vector<int> members_;
  const int rank_;
};

}  // namespace tutti::collectives
