// The device-buffer calls of tutti.h that act on a communicator: where its buffers
// are, its CUDA device and its stream.
#include "capi/c_enum.h"
#include "capi/guard.h"
#include "capi/handle.h"
#include "runtime/device/memory.h"

static_assert(static_cast<int>(tutti::device::Memory::kAuto) == TUTTI_MEMORY_AUTO &&
                  static_cast<int>(tutti::device::Memory::kHost) == TUTTI_MEMORY_HOST &&
                  static_cast<int>(tutti::device::Memory::kDevice) == TUTTI_MEMORY_CUDA,
              "runtime/device/memory.h and tutti.h disagree on memory kinds");

extern "C" {

TUTTI_API tutti_status tutti_comm_set_memory(tutti_comm* comm, tutti_memory memory) {
  const char* api = "tutti_comm_set_memory";
  tutti::comm::Comm* impl = tutti::capi::live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  const int32_t value = tutti::capi::c_enum_value(memory);
  if (value != TUTTI_MEMORY_AUTO && value != TUTTI_MEMORY_HOST && value != TUTTI_MEMORY_CUDA) {
    return tutti::capi::invalid_argument(api,
                                         tutti::concat("memory ", value, " is not a tutti_memory on ", impl->describe(),
                                                       "; use TUTTI_MEMORY_AUTO, _HOST or _CUDA"));
  }
  return tutti::capi::guarded(api, [&] { impl->set_memory(static_cast<tutti::device::Memory>(value)); });
}

TUTTI_API tutti_status tutti_comm_set_device(tutti_comm* comm, int32_t device) {
  const char* api = "tutti_comm_set_device";
  tutti::comm::Comm* impl = tutti::capi::live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (device < 0) {
    return tutti::capi::invalid_argument(api, tutti::concat("device ", device, " is negative on ", impl->describe(),
                                                            "; pass a CUDA device number (0 for the first)"));
  }
  return tutti::capi::guarded(api, [&] { impl->set_device(device); });
}

TUTTI_API tutti_status tutti_comm_set_stream(tutti_comm* comm, void* stream) {
  const char* api = "tutti_comm_set_stream";
  tutti::comm::Comm* impl = tutti::capi::live_comm(comm, api);
  if (impl == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  return tutti::capi::guarded(api, [&] { impl->set_stream(stream); });
}

}  // extern "C"
