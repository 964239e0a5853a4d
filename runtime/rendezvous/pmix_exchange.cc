#include "runtime/rendezvous/pmix_exchange.h"

#include <dlfcn.h>
#include <pmix.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/common/shared_library.h"
#include "runtime/rendezvous/host_port.h"

namespace tutti::rendezvous {
namespace {

constexpr const char* kKey = "tutti.store";
constexpr const char* kPmixName = "libpmix.so.2";

// libpmix, opened at the first exchange (dlopen) rather than linked: it brings five
// libraries of its own (libevent twice, hwloc, udev, munge), 2.9 ms of every process's
// start where page-table changes are costly (a PVM guest), and only this path uses it.
// Only functions: PMIx's macros that call into the library are written out below.
struct PmixApi {
  decltype(&::PMIx_Init) Init;
  decltype(&::PMIx_Finalize) Finalize;
  decltype(&::PMIx_Error_string) Error_string;
  decltype(&::PMIx_Fence_nb) Fence_nb;
  decltype(&::PMIx_Put) Put;
  decltype(&::PMIx_Commit) Commit;
  decltype(&::PMIx_Get) Get;
  decltype(&::PMIx_Value_destruct) Value_destruct;
};

// First from the directory pkg-config named at build time (TUTTI_PMIX_LIBRARY; Debian
// keeps libpmix off the loader's path, in pmix2/lib), then wherever the loader finds
// it. Never closed: PMIx may keep a thread, and a program's MPI may use it too.
PmixApi load_pmix() {
  void* library = nullptr;
  std::string why;
  for (const char* path : {TUTTI_PMIX_LIBRARY, kPmixName}) {
    library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (library != nullptr) {
      why.clear();  // the first path's failure says nothing once the second loaded
      break;
    }
    why += concat(why.empty() ? "" : "; ", dlerror());
  }
  PmixApi api{};
  auto bind = [&](const char* name, auto* slot) {
    return bind_symbol(library, kPmixName, name, "a PMIx older than the one tutti was built against?", slot, &why);
  };
  bool bound = library != nullptr && bind("PMIx_Init", &api.Init) && bind("PMIx_Finalize", &api.Finalize) &&
               bind("PMIx_Error_string", &api.Error_string) && bind("PMIx_Fence_nb", &api.Fence_nb) &&
               bind("PMIx_Put", &api.Put) && bind("PMIx_Commit", &api.Commit) && bind("PMIx_Get", &api.Get) &&
               bind("PMIx_Value_destruct", &api.Value_destruct);
  if (!bound) {
    fail(Status::kInvalidArgument,
         concat("tutti_comm_init: this process runs under a PMIx server (PMIX_NAMESPACE is set) and no rendezvous "
                "address was given, but PMIx could not be loaded (",
                why,
                "); install the PMIx library (Debian: libpmix2), or set MASTER_ADDR and MASTER_PORT (or "
                "TUTTI_ADDR=HOST:PORT) to where rank 0 should serve the store"));
  }
  return api;
}

// Loaded once; a failed load throws, and the next call tries again.
const PmixApi& pmix() {
  static const PmixApi api = load_pmix();
  return api;
}

[[noreturn]] void fail_call(const char* call, pmix_status_t status) {
  fail(Status::kTransport,
       concat("tutti_comm_init: ", call, " failed: ", pmix().Error_string(status), " (PMIx status ", status,
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
  // PMIX_INFO_LOAD of a bool, written out (it calls into libpmix); nothing to destruct.
  pmix_info_t info;
  std::memset(&info, 0, sizeof info);
  std::strncpy(info.key, PMIX_COLLECT_DATA, PMIX_MAX_KEYLEN);
  info.value.type = PMIX_BOOL;
  info.value.data.flag = true;
  auto* data = new std::shared_ptr<FenceDone>(done);
  pmix_status_t status = pmix().Fence_nb(nullptr, 0, &info, 1, on_fence, data);
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
  const PmixApi& api = pmix();
  pmix_status_t status = api.Init(&me, nullptr, 0);
  if (status != PMIX_SUCCESS) fail_call("PMIx_Init", status);
  // PMIx counts its initialisations, so this leaves a program's own use of PMIx (an
  // MPI library, say) as it was.
  struct Finalize {
    const PmixApi& api;
    ~Finalize() { api.Finalize(nullptr, 0); }
  } finalize{api};

  if (serving) {
    if (me.rank != 0) {
      fail(Status::kInvalidArgument,
           concat("tutti_comm_init: this process serves the store as rank 0 but is PMIx rank ", me.rank, " of ",
                  me.nspace, "; leave TUTTI_RANK unset under mpirun and srun, or set TUTTI_ADDR"));
    }
    std::string text = join_host_port(served.host, served.port);
    pmix_value_t value;
    std::memset(&value, 0, sizeof value);
    value.type = PMIX_STRING;
    value.data.string = text.data();
    status = api.Put(PMIX_GLOBAL, kKey, &value);
    if (status != PMIX_SUCCESS) fail_call("PMIx_Put", status);
    status = api.Commit();
    if (status != PMIX_SUCCESS) fail_call("PMIx_Commit", status);
  }
  fence(deadline);

  pmix_proc_t server;
  std::memset(&server, 0, sizeof server);
  std::memcpy(server.nspace, me.nspace, sizeof server.nspace);
  server.rank = 0;
  pmix_value_t* value = nullptr;
  status = api.Get(&server, kKey, nullptr, 0, &value);
  if (status != PMIX_SUCCESS) fail_call("PMIx_Get of rank 0's store address", status);
  std::string text = value->type == PMIX_STRING && value->data.string != nullptr ? value->data.string : "";
  api.Value_destruct(value);  // PMIX_VALUE_RELEASE, written out
  std::free(value);

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
