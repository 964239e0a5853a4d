#include "runtime/collectives/subset_transport.h"

#include <utility>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::collectives {

SubsetTransport::SubsetTransport(transport::Transport& whole, std::vector<int> members, int rank)
    : whole_(whole), members_(std::move(members)), rank_(rank) {}

int SubsetTransport::member(int peer, const char* call) const {
  if (peer < 0 || peer >= size()) {
    fail(Status::kInvalidArgument,
         concat(call, ": peer ", peer, " is not a rank of a subset of ", size(), " ranks (a bug in tutti)"));
  }
  return members_[peer];
}

transport::Request* SubsetTransport::post_send(int peer, transport::Tag tag, const void* data, size_t bytes) {
  return whole_.post_send(member(peer, "post_send"), tag, data, bytes);
}

transport::Request* SubsetTransport::post_recv(int peer, transport::Tag tag, void* data, size_t bytes) {
  return whole_.post_recv(member(peer, "post_recv"), tag, data, bytes);
}

}  // namespace tutti::collectives
