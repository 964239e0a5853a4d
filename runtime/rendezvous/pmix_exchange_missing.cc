// pmix_exchange.h for a build without libpmix-dev.
#include "runtime/common/error.h"
#include "runtime/rendezvous/pmix_exchange.h"

namespace tutti::rendezvous {

bool pmix_built() { return false; }

StoreAddress exchange_store_address(bool, const StoreAddress&, Deadline) {
  fail(Status::kInvalidArgument,
       "tutti_comm_init: this process runs under a PMIx server (PMIX_NAMESPACE is set) and no rendezvous address "
       "was given, but this tutti was built without PMIx; set MASTER_ADDR and MASTER_PORT (or TUTTI_ADDR=HOST:PORT) "
       "to where rank 0 should serve the store, or rebuild tutti with libpmix-dev installed");
}

}  // namespace tutti::rendezvous
