// The shared-memory calls of tutti.h: tutti_mem_alloc and tutti_mem_free.
#include "capi/guard.h"
#include "capi/handle.h"

using tutti::capi::guarded;
using tutti::capi::invalid_argument;
using tutti::capi::live_comm;

TUTTI_API tutti_status tutti_mem_alloc(tutti_comm* comm, size_t bytes, void** ptr) {
  const char* api = "tutti_mem_alloc";
  if (ptr == nullptr) return invalid_argument(api, "ptr is NULL; pass the address of a void*");
  *ptr = nullptr;
  tutti::comm::Comm* impl = live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (bytes == 0) {
    return invalid_argument(api, tutti::concat("bytes is 0 on ", impl->describe(), "; ask for at least one byte"));
  }
  return guarded(api, [&] { *ptr = impl->allocate_shared(bytes); });
}

TUTTI_API tutti_status tutti_mem_free(tutti_comm* comm, void* ptr) {
  const char* api = "tutti_mem_free";
  tutti::comm::Comm* impl = live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (ptr == nullptr) return TUTTI_OK;
  return guarded(api, [&] {
    if (!impl->free_shared(ptr)) {
      tutti::fail(tutti::Status::kInvalidArgument,
                  tutti::concat(api, ": ", ptr, " did not come from tutti_mem_alloc on ", impl->describe(),
                                ", or was freed already; pass what tutti_mem_alloc returned on this communicator"));
    }
  });
}
