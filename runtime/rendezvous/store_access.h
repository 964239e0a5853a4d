// The store a world meets through, reached the way its plan says: a Slurm node name
// resolved to its address, the store served by this rank (and its address published
// to a file for file://, or through PMIx), the node's relay served by its local rank
// 0 (store/relay.h), then a connection to the store, or to the relay standing in for it. Comm::init makes
// this one call whatever the init method; split and shrink reuse what it found.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/loop/loop.h"
#include "runtime/rendezvous/init_cancel.h"
#include "runtime/rendezvous/plan.h"
#include "runtime/store/client.h"

namespace tutti::rendezvous {

// The store, or node relay, this process serves, shared by the communicators that use
// it so that it outlives whichever of them goes first; a published address (file://,
// the relay's file) goes with it, as torch's FileStore removes its file.
class HostedStore;

struct StoreAccess {
  std::shared_ptr<HostedStore> hosted;  // set where this rank serves the store or its node's relay
  std::unique_ptr<store::Client> client;
  std::string host;  // where the store (or the relay) listens, for the connections splits open
  uint16_t port = 0;
};

// Throws Error: kTimeout past deadline, kAborted once cancel (if given) is cancelled
// (it is asked between the steps and while connecting), or the step's own error; api
// starts the message of a failure to connect.
StoreAccess reach_store(const std::shared_ptr<loop::Loop>& loop, const Plan& plan, Deadline deadline,
                        InitCancel* cancel, const char* api = "tutti_comm_init");

}  // namespace tutti::rendezvous
