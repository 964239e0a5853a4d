#include "runtime/device/nccl/cuda_api.h"

#include <dlfcn.h>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/shared_library.h"

namespace tutti::device::nccl {
namespace {

// The runtime of the toolkit the headers came from: its ABI is the one compiled against.
const std::string kCudartName = concat("libcudart.so.", CUDART_VERSION / 1000);

struct Loaded {
  CudaApi api{};
  std::string why_not;  // "" once loaded with a device
};

template <typename Fn>
bool bind(void* library, const char* name, Fn* slot, std::string* why_not) {
  return bind_symbol(library, kCudartName, name, "a CUDA runtime older than the toolkit's?", slot, why_not);
}

Loaded load() {
  Loaded loaded;
  void* library = dlopen(kCudartName.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr) {
    loaded.why_not = concat("cannot load ", kCudartName, ": ", dlerror());
    return loaded;
  }
  CudaApi& api = loaded.api;
  std::string* why = &loaded.why_not;
  bool ok = bind(library, "cudaGetDeviceCount", &api.GetDeviceCount, why) &&
            bind(library, "cudaGetDevice", &api.GetDevice, why) &&
            bind(library, "cudaSetDevice", &api.SetDevice, why) &&
            bind(library, "cudaGetDeviceProperties", &api.GetDeviceProperties, why) &&
            bind(library, "cudaGetErrorString", &api.GetErrorString, why) &&
            bind(library, "cudaPointerGetAttributes", &api.PointerGetAttributes, why) &&
            bind(library, "cudaStreamCreateWithFlags", &api.StreamCreateWithFlags, why) &&
            bind(library, "cudaStreamDestroy", &api.StreamDestroy, why) &&
            bind(library, "cudaStreamWaitEvent", &api.StreamWaitEvent, why) &&
            bind(library, "cudaEventCreateWithFlags", &api.EventCreateWithFlags, why) &&
            bind(library, "cudaEventDestroy", &api.EventDestroy, why) &&
            bind(library, "cudaEventRecord", &api.EventRecord, why) &&
            bind(library, "cudaEventQuery", &api.EventQuery, why) &&
            bind(library, "cudaMemcpyAsync", &api.MemcpyAsync, why) &&
            bind(library, "cudaHostAlloc", &api.HostAlloc, why) && bind(library, "cudaFreeHost", &api.FreeHost, why);
  if (!ok) return loaded;
  int devices = 0;
  cudaError_t error = api.GetDeviceCount(&devices);
  if (error != cudaSuccess) {
    loaded.why_not = api.describe("cudaGetDeviceCount", error);
  } else if (devices == 0) {
    loaded.why_not = "cudaGetDeviceCount: no CUDA device";
  }
  // The library stays loaded for the process's life: CUDA does not survive unloading.
  return loaded;
}

}  // namespace

std::string CudaApi::describe(const char* call, cudaError_t error) const {
  return concat(call, ": ", GetErrorString(error), " (cudaError ", static_cast<int>(error), ")");
}

void CudaApi::check(cudaError_t error, const char* call, const std::string& what) const {
  if (error != cudaSuccess) [[unlikely]]
    fail(Status::kTransport, concat(what, ": ", describe(call, error)));
}

bool cuda_in_use() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return false;
  dlclose(driver);  // drops the reference NOLOAD took
  return true;
}

const CudaApi* cuda_api(std::string* why_not) {
  static const Loaded loaded = load();
  if (!loaded.why_not.empty()) {
    *why_not = loaded.why_not;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace tutti::device::nccl
