// The store's address through PMIx, where no PMIx server runs: the error must name the
// PMIx call that failed and say what to do instead (in a build without PMIx, what to
// set). The exchange itself needs a launcher's PMIx server; tests/slurm runs it under
// mpirun and srun --mpi=pmix.
#include <criterion/criterion.h>
#include <stdlib.h>

#include <string>

#include "runtime/common/error.h"
#include "runtime/rendezvous/pmix_exchange.h"

using tutti::Deadline;
using tutti::rendezvous::exchange_store_address;
using tutti::rendezvous::pmix_built;
using tutti::rendezvous::StoreAddress;

Test(pmix_exchange, no_pmix_server_is_a_clear_error, .timeout = 30) {
  for (const char* name : {"PMIX_NAMESPACE", "PMIX_RANK", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41", "PMIX_SERVER_URI3",
                           "PMIX_SERVER_URI2", "PMIX_SERVER_URI21"}) {
    unsetenv(name);
  }
  try {
    exchange_store_address(true, StoreAddress{"node01", 29500}, Deadline::after_ms(10000));
    cr_assert_fail("exchange_store_address did not fail with no PMIx server");
  } catch (const tutti::Error& error) {
    std::string message = error.what();
    if (pmix_built()) {
      cr_expect(error.status() == tutti::Status::kTransport);
      cr_expect(message.rfind("tutti_comm_init: PMIx_Init failed: ", 0) == 0, "%s", message.c_str());
      cr_expect(message.find("; check that the launcher's PMIx server is running (mpirun, srun --mpi=pmix), or set "
                             "MASTER_ADDR and MASTER_PORT") != std::string::npos,
                "%s", message.c_str());
    } else {
      cr_expect(error.status() == tutti::Status::kInvalidArgument);
      cr_expect(message.find("built without PMIx; set MASTER_ADDR and MASTER_PORT") != std::string::npos, "%s",
                message.c_str());
    }
  }
}
