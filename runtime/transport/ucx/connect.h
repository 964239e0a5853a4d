// The UCX transport: a Transport over UCP tagged messages. One UCP context per process
// (shared by all communicators: memory domains and transport discovery are costly and
// the same for all), and one UCP worker per communicator, so that a communicator's
// executor drives its own worker without a lock shared with other communicators, and
// concurrent communicators (a split running beside its parent) never contend.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "runtime/store/client.h"
#include "runtime/transport/transport.h"

namespace tutti::transport::ucx {

// Creates this rank's worker and publishes its address under `prefix`
// ("world.0/ucx/<rank>"), without waiting for the store's answer: a failure to publish
// is logged (the connection's end fails the next store call too); waits for no other
// rank. A peer's address is read from there on the first message to or from it
// (worker_transport.h), so that each rank reads those of the peers it talks to, not
// all N: the usual peers' (below) in one request, at the first message to one of them. `where` names the communicator
// in messages. Throws Error (kTransport naming what UCX said; kInvalidArgument for a rank or size out of range). The
// store client must outlive the transport.
std::unique_ptr<Transport> connect(store::Client& store, const std::string& prefix, int rank, int size,
                                   const std::string& where);

// The peers tutti's algorithms talk to, O(log N) of them: the ring's neighbours
// (rank +- 1) and recursive doubling's and the binomial trees' partners (rank ^ 2^k).
std::set<int> usual_peers(int rank, int size);

}  // namespace tutti::transport::ucx
