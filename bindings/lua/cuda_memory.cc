#include "bindings/lua/cuda_memory.h"

#include <dlfcn.h>

#include <string>

namespace tutti::lua {
namespace {

struct Loaded {
  CudaMemory memory{};
  std::string why_not;  // "" once usable
};

template <typename Fn>
bool bind(void* library, const char* name, Fn* slot, std::string* why_not) {
  *slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (*slot == nullptr) *why_not = std::string("the CUDA runtime has no ") + name;
  return *slot != nullptr;
}

Loaded load() {
  Loaded loaded;
  // The runtime libtutti was built against first, then whichever the system has.
  void* library = nullptr;
  for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    library = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (library != nullptr) break;
  }
  if (library == nullptr) {
    loaded.why_not = std::string("cannot load the CUDA runtime (libcudart.so): ") + dlerror();
    return loaded;
  }
  CudaMemory& m = loaded.memory;
  std::string* why = &loaded.why_not;
  int (*get_device_count)(int*) = nullptr;
  if (!(bind(library, "cudaMalloc", &m.Malloc, why) && bind(library, "cudaFree", &m.Free, why) &&
        bind(library, "cudaMemcpy", &m.Memcpy, why) && bind(library, "cudaMemset", &m.Memset, why) &&
        bind(library, "cudaGetErrorString", &m.GetErrorString, why) &&
        bind(library, "cudaGetDeviceCount", &get_device_count, why))) {
    return loaded;
  }
  int devices = 0;
  int error = get_device_count(&devices);
  if (error != 0) {
    loaded.why_not = std::string("cudaGetDeviceCount: ") + m.GetErrorString(error);
  } else if (devices == 0) {
    loaded.why_not = "cudaGetDeviceCount: no CUDA device";
  }
  return loaded;
}

}  // namespace

void CudaMemory::check(lua_State* L, int error, const char* what) const {
  if (error != 0) luaL_error(L, "%s: %s", what, GetErrorString(error));
}

const CudaMemory& cuda_memory(lua_State* L) {
  static const Loaded loaded = load();
  if (!loaded.why_not.empty()) luaL_error(L, "CUDA is not available: %s", loaded.why_not.c_str());
  return loaded.memory;
}

}  // namespace tutti::lua
