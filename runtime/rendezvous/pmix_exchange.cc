#include "runtime/rendezvous/pmix_exchange.h"

#include <pmix.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/rendezvous/host_port.h"

namespace tutti::rendezvous {
namespace {

constexpr const char* kKey = "tutti.store";

[[noreturn]] void fail_call(const char* call, pmix_status_t status) {
  fail(Status::kTransport,
       concat("tutti_comm_init: ", call, " failed: ", PMIx_Error_string(status), " (PMIx status ", status,
              "); check that the launcher's PMIx server is running "
              "(mpirun, srun --mpi=pmix), or set MASTER_ADDR and MASTER_PORT"));
}

// The fence's completion, shared with its callback: a fence that never completes
// outlives the wait for it, so the callback must find it still there.
struct FenceDone {
  std::mutex mutex;
  std::condition_variable changed;
  bool done = false;
  pmix_status_t status = PMIX_SUCCESS;
};

void on_fence(pmix_status_t status, void* data) {
  auto* shared = static_cast<std::shared_ptr<FenceDone>*>(data);
  {
    std::lock_guard<std::mutex> lock((*shared)->mutex);
    (*shared)->done = true;
    (*shared)->status = status;
  }
  (*shared)->changed.notify_all();
  delete shared;
}

// Every process of the namespace, collecting what each put, waited for no longer than
// the deadline. PMIx has no way to cancel a fence, so one that runs out of time is
// left to its callback.
void fence(Deadline deadline) {
  auto done = std::make_shared<FenceDone>();
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  bool collect = true;
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  auto* data = new std::shared_ptr<FenceDone>(done);
  pmix_status_t status = PMIx_Fence_nb(nullptr, 0, &info, 1, on_fence, data);
  PMIX_INFO_DESTRUCT(&info);
  if (status != PMIX_SUCCESS) {
    delete data;
    fail_call("PMIx_Fence_nb", status);
  }
  std::unique_lock<std::mutex> lock(done->mutex);
  if (!done->changed.wait_until(lock, deadline.at(), [&] { return done->done; })) {
    fail(Status::kTimeout,
         "tutti_comm_init: timed out waiting at the PMIx fence for the store's address: not every "
         "process of the job got this far; start every rank the same way, or raise "
         "config.init_timeout_ms (TUTTI_INIT_TIMEOUT_MS)");
  }
  if (done->status != PMIX_SUCCESS) fail_call("PMIx_Fence", done->status);
}

}  // namespace

bool pmix_built() { return true; }

StoreAddress exchange_store_address(bool serving, const StoreAddress& served, Deadline deadline) {
  pmix_proc_t me;
  pmix_status_t status = PMIx_Init(&me, nullptr, 0);
  if (status != PMIX_SUCCESS) fail_call("PMIx_Init", status);
  // PMIx counts its initialisations, so this leaves a program's own use of PMIx (an
  // MPI library, say) as it was.
  struct Finalize {
    ~Finalize() { PMIx_Finalize(nullptr, 0); }
  } finalize;

  if (serving) {
    if (me.rank != 0) {
      fail(Status::kInvalidArgument,
           concat("tutti_comm_init: this process serves the store as rank 0 but is PMIx rank ", me.rank, " of ",
                  me.nspace, "; leave TUTTI_RANK unset under mpirun and srun, or set TUTTI_ADDR"));
    }
    std::string text = join_host_port(served.host, served.port);
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_STRING;
    value.data.string = text.data();
    status = PMIx_Put(PMIX_GLOBAL, kKey, &value);
    if (status != PMIX_SUCCESS) fail_call("PMIx_Put", status);
    status = PMIx_Commit();
    if (status != PMIX_SUCCESS) fail_call("PMIx_Commit", status);
  }
  fence(deadline);

  pmix_proc_t server;
  PMIX_PROC_LOAD(&server, me.nspace, 0);
  pmix_value_t* value = nullptr;
  status = PMIx_Get(&server, kKey, nullptr, 0, &value);
  if (status != PMIX_SUCCESS) fail_call("PMIx_Get of rank 0's store address", status);
  std::string text = value->type == PMIX_STRING && value->data.string != nullptr ? value->data.string : "";
  PMIX_VALUE_RELEASE(value);

  StoreAddress found;
  std::string port;
  std::optional<uint16_t> number;
  if (split_host_port(text, &found.host, &port)) number = parse_port(port);
  if (!number) {
    fail(Status::kInternal, concat("tutti_comm_init: PMIx rank 0 of ", me.nspace, " published \"", text,
                                   "\" as the store's address, which is not host:port; please report this"));
  }
  found.port = *number;
  log::info("rendezvous address from PMIx (namespace ", me.nspace, "): ", text);
  return found;
}

}  // namespace tutti::rendezvous
