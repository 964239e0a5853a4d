// The store's address through PMIx, for launchers that run a PMIx server beside every
// process (Open MPI's mpirun, srun --mpi=pmix) and name no rendezvous host: the
// process serving the store publishes "host:port", every process fences, and the
// others read it. PMIx is optional in the build (libpmix-dev, found by pkg-config):
// pmix_exchange.cc uses it, pmix_exchange_missing.cc says how to do without.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/common/deadline.h"

namespace tutti::rendezvous {

// Whether this build can talk to a PMIx server.
bool pmix_built();

struct StoreAddress {
  std::string host;
  uint16_t port = 0;
};

// Collective over every process of this PMIx namespace. The serving process (which
// must be PMIx rank 0) passes the address its store listens at; the others pass
// nothing, and every process gets that address back. Throws Error: kTimeout when the
// fence does not complete by the deadline (a process of the job never got here);
// kInvalidArgument when the serving process is not PMIx rank 0, when libpmix cannot be
// loaded (it is opened here, not linked) or, in a build without PMIx, always, saying
// what to set instead; kTransport naming the PMIx call and its
// status when the PMIx server cannot be reached or refuses; kInternal when rank 0
// published something that is not host:port.
StoreAddress exchange_store_address(bool serving, const StoreAddress& served, Deadline deadline);

}  // namespace tutti::rendezvous
