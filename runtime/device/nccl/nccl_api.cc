#include "runtime/device/nccl/nccl_api.h"

#include <dlfcn.h>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/shared_library.h"

namespace tutti::device::nccl {
namespace {

constexpr const char* kNcclName = "libnccl.so.2";

struct Loaded {
  NcclApi api{};
  std::string why_not;
};

template <typename Fn>
bool bind(void* library, const char* name, Fn* slot, std::string* why_not) {
  return bind_symbol(library, kNcclName, name, "tutti needs NCCL 2.18 or newer", slot, why_not);
}

Loaded load() {
  Loaded loaded;
  void* library = dlopen(kNcclName, RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    loaded.why_not = concat("cannot load ", kNcclName, ": ", dlerror());
    return loaded;
  }
  NcclApi& api = loaded.api;
  std::string* why = &loaded.why_not;
  bool ok = bind(library, "ncclGetVersion", &api.GetVersion, why) &&
            bind(library, "ncclGetUniqueId", &api.GetUniqueId, why) &&
            bind(library, "ncclCommInitRankConfig", &api.CommInitRankConfig, why) &&
            bind(library, "ncclCommSplit", &api.CommSplit, why) &&
            bind(library, "ncclCommGetAsyncError", &api.CommGetAsyncError, why) &&
            bind(library, "ncclCommAbort", &api.CommAbort, why) &&
            bind(library, "ncclCommFinalize", &api.CommFinalize, why) &&
            bind(library, "ncclCommDestroy", &api.CommDestroy, why) &&
            bind(library, "ncclGetErrorString", &api.GetErrorString, why) &&
            bind(library, "ncclGetLastError", &api.GetLastError, why) &&
            bind(library, "ncclAllReduce", &api.AllReduce, why) && bind(library, "ncclReduce", &api.Reduce, why) &&
            bind(library, "ncclBroadcast", &api.Broadcast, why) &&
            bind(library, "ncclAllGather", &api.AllGather, why) &&
            bind(library, "ncclReduceScatter", &api.ReduceScatter, why) && bind(library, "ncclSend", &api.Send, why) &&
            bind(library, "ncclRecv", &api.Recv, why) && bind(library, "ncclGroupStart", &api.GroupStart, why) &&
            bind(library, "ncclGroupEnd", &api.GroupEnd, why);
  if (!ok) return loaded;
  if (api.GetVersion(&api.version) != ncclSuccess) loaded.why_not = "ncclGetVersion failed";
  return loaded;
}

}  // namespace

std::string NcclApi::describe(const char* call, ncclResult_t result, ncclComm_t comm) const {
  const char* last = GetLastError(comm);
  return concat(call, ": ", GetErrorString(result), last != nullptr && *last ? concat(" (NCCL: ", last, ")") : "");
}

void NcclApi::check(ncclResult_t result, const char* call, const std::string& what, ncclComm_t comm) const {
  if (result != ncclSuccess && result != ncclInProgress) [[unlikely]] {
    fail(Status::kTransport, concat(what, ": ", describe(call, result, comm)));
  }
}

const NcclApi* nccl_api(std::string* why_not) {
  static const Loaded loaded = load();
  if (!loaded.why_not.empty()) {
    *why_not = loaded.why_not;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace tutti::device::nccl
