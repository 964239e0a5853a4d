#include "bindings/lua/cuda_tensor.h"

#include <cstring>

#include "bindings/lua/args.h"
#include "bindings/lua/cuda_memory.h"
#include "bindings/lua/status.h"

namespace tutti::lua {
namespace {

constexpr const char* kCudaStorageType = "tutti.cuda_storage";

struct DeviceStorage {
  void* pointer;
};

int storage_gc(lua_State* L) {
  auto* storage = static_cast<DeviceStorage*>(luaL_checkudata(L, 1, kCudaStorageType));
  // A storage only exists once cuda_memory succeeded, so it cannot raise here.
  if (storage->pointer != nullptr) cuda_memory(L).Free(storage->pointer);
  storage->pointer = nullptr;
  return 0;
}

Tensor* check_cuda_tensor(lua_State* L, int arg) {
  return static_cast<Tensor*>(luaL_checkudata(L, arg, kCudaTensorType));
}

int cuda_cpu(lua_State* L) {
  check_cuda_tensor(L, 1);
  push_host_copy(L, 1);
  return 1;
}

int cuda_cuda(lua_State* L) {
  check_cuda_tensor(L, 1);
  lua_settop(L, 1);
  return 1;
}

int cuda_to(lua_State* L) {
  check_cuda_tensor(L, 1);
  const char* to = luaL_checkstring(L, 2);
  if (std::strcmp(to, "cpu") == 0) return cuda_cpu(L);
  if (std::strcmp(to, "cuda") == 0) return cuda_cuda(L);
  return luaL_argerror(L, 2,
                       lua_pushfstring(L,
                                       "a tutti.cuda_tensor goes \"cpu\" or \"cuda\"; convert its dtype on "
                                       "the host: t:cpu():to(\"%s\"):cuda()",
                                       to));
}

int cuda_device(lua_State* L) {
  check_cuda_tensor(L, 1);
  lua_pushliteral(L, "cuda");
  return 1;
}

int cuda_shape(lua_State* L) {
  Tensor* t = check_cuda_tensor(L, 1);
  lua_createtable(L, t->ndim, 0);
  for (int d = 0; d < t->ndim; ++d) {
    lua_pushinteger(L, t->shape()[d]);
    lua_rawseti(L, -2, d + 1);
  }
  return 1;
}

int cuda_dtype(lua_State* L) {
  lua_pushstring(L, dtype_name(check_cuda_tensor(L, 1)->dtype));
  return 1;
}

int cuda_numel(lua_State* L) {
  lua_pushinteger(L, check_cuda_tensor(L, 1)->numel);
  return 1;
}

int cuda_tostring(lua_State* L) {
  check_cuda_tensor(L, 1);
  push_host_copy(L, 1);
  const char* host = luaL_tolstring(L, -1, nullptr);
  lua_pushfstring(L, "%s (on cuda)", host);
  return 1;
}

// t:show(...) and t:save_png(...) on a host copy.
template <const char* const* method>
int on_host_copy(lua_State* L) {
  check_cuda_tensor(L, 1);
  int top = lua_gettop(L);
  push_host_copy(L, 1);
  lua_getfield(L, -1, *method);
  lua_insert(L, -2);
  for (int i = 2; i <= top; ++i) lua_pushvalue(L, i);
  lua_call(L, top, LUA_MULTRET);
  return lua_gettop(L) - top;
}

constexpr const char* kShow = "show";
constexpr const char* kSavePng = "save_png";

const luaL_Reg kCudaTensorMethods[] = {
    {"cpu", cuda_cpu},
    {"cuda", cuda_cuda},
    {"to", cuda_to},
    {"device", cuda_device},
    {"shape", cuda_shape},
    {"dtype", cuda_dtype},
    {"numel", cuda_numel},
    {"show", on_host_copy<&kShow>},
    {"save_png", on_host_copy<&kSavePng>},
    {nullptr, nullptr},
};

// The host tensor's side: t:cuda(), t:cpu() (itself), t:device().
int host_cuda(lua_State* L) {
  check_tensor(L, 1);
  push_cuda_copy(L, 1);
  return 1;
}

int host_cpu(lua_State* L) {
  check_tensor(L, 1);
  lua_settop(L, 1);
  return 1;
}

int host_device(lua_State* L) {
  check_tensor(L, 1);
  lua_pushliteral(L, "cpu");
  return 1;
}

}  // namespace

extern const luaL_Reg kTensorDevice[] = {
    {"cuda", host_cuda},
    {"cpu", host_cpu},
    {"device", host_device},
    {nullptr, nullptr},
};

Tensor* to_cuda_tensor(lua_State* L, int index) {
  return static_cast<Tensor*>(luaL_testudata(L, index, kCudaTensorType));
}

Tensor* push_cuda_copy(lua_State* L, int index) {
  index = lua_absindex(L, index);
  Tensor* host = check_tensor(L, index);
  const CudaMemory& cuda = cuda_memory(L);
  auto* t = static_cast<Tensor*>(lua_newuserdatauv(L, sizeof(Tensor) + sizeof(int64_t) * host->ndim, 1));
  t->data = nullptr;
  t->dtype = host->dtype;
  t->ndim = host->ndim;
  t->numel = host->numel;
  for (int d = 0; d < host->ndim; ++d) t->shape()[d] = host->shape()[d];
  auto* storage = static_cast<DeviceStorage*>(lua_newuserdatauv(L, sizeof(DeviceStorage), 0));
  storage->pointer = nullptr;
  luaL_setmetatable(L, kCudaStorageType);
  if (host->bytes() > 0) {
    cuda.check(L, cuda.Malloc(&storage->pointer, host->bytes()), "cudaMalloc");
    cuda.check(L, cuda.Memcpy(storage->pointer, host->data, host->bytes(), kHostToDevice), "cudaMemcpy to the GPU");
  }
  t->data = static_cast<char*>(storage->pointer);
  lua_setiuservalue(L, -2, 1);
  luaL_setmetatable(L, kCudaTensorType);
  return t;
}

Tensor* push_host_copy(lua_State* L, int index) {
  index = lua_absindex(L, index);
  Tensor* device = check_cuda_tensor(L, index);
  Tensor* host = push_tensor(L, device->dtype, device->ndim, device->shape());
  if (host->bytes() > 0) {
    const CudaMemory& cuda = cuda_memory(L);
    cuda.check(L, cuda.Memcpy(host->data, device->data, host->bytes(), kDeviceToHost), "cudaMemcpy to the host");
  }
  return host;
}

Tensor* check_buffer(lua_State* L, int arg, tutti_comm* comm) {
  Tensor* device = to_cuda_tensor(L, arg);
  if (device == nullptr) return check_tensor(L, arg);
  tutti_status status = tutti_comm_set_memory(comm, TUTTI_MEMORY_AUTO);
  if (status != TUTTI_OK) raise_status(L, status);
  return device;
}

bool take_device_option(lua_State* L) {
  int top = lua_gettop(L);
  if (top < 2 || lua_type(L, top) != LUA_TTABLE) return false;
  // A table without a device field is left to the constructor, which says what it
  // expected there.
  if (lua_getfield(L, top, "device") == LUA_TNIL) {
    lua_pop(L, 1);
    return false;
  }
  const char* device = lua_tostring(L, -1);
  if (device == nullptr || (std::strcmp(device, "cuda") != 0 && std::strcmp(device, "cpu") != 0)) {
    luaL_argerror(L, top, "options: device must be \"cpu\" or \"cuda\"");
  }
  bool cuda = std::strcmp(device, "cuda") == 0;
  lua_settop(L, top - 1);
  return cuda;
}

void open_cuda_tensor(lua_State* L) {
  luaL_newmetatable(L, kCudaStorageType);
  lua_pushcfunction(L, storage_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, kCudaTensorType);
  luaL_newlib(L, kCudaTensorMethods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, cuda_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

}  // namespace tutti::lua
