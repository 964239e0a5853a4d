#include "bindings/lua/shared_memory.h"

#include "bindings/lua/args.h"
#include "bindings/lua/status.h"
#include "bindings/lua/tensor.h"

namespace tutti::lua {
namespace {

constexpr const char* kSharedStorageType = "tutti.shared_storage";

// A storage from mem_alloc: its user value is the tutti.comm, which must outlive it.
struct SharedStorage {
  Comm* comm;
};

int storage_gc(lua_State* L) {
  auto* storage = static_cast<SharedStorage*>(luaL_checkudata(L, 1, kSharedStorageType));
  if (storage->comm != nullptr) release_storage(storage->comm);
  storage->comm = nullptr;
  return 0;
}

}  // namespace

int comm_mem_alloc(lua_State* L, const Target& target) {
  int64_t shape[kMaxDims];
  int next = 0;
  const int32_t ndim = check_shape(L, target.first, shape, &next);
  const tutti_dtype dtype = opt_dtype(L, next, TUTTI_DTYPE_FLOAT32);
  const size_t bytes = tensor_bytes(L, dtype, ndim, shape);
  if (bytes == 0) luaL_argerror(L, target.first, "shape: mem_alloc needs at least one element");
  // The storage first, holding nothing yet, so that nothing that may raise (Lua out of
  // memory) comes between the allocation and the storage that keeps it.
  auto* storage = static_cast<SharedStorage*>(lua_newuserdatauv(L, sizeof(SharedStorage), 1));
  storage->comm = nullptr;
  luaL_setmetatable(L, kSharedStorageType);
  push_target(L, target);
  Comm* comm = to_comm(L, -1);
  lua_setiuservalue(L, -2, 1);
  void* data = nullptr;
  check_status(L, tutti_mem_alloc(target.comm, bytes, &data));
  storage->comm = comm;
  ++comm->shared_storages;
  push_tensor_over(L, -1, static_cast<char*>(data), dtype, ndim, shape);
  return 1;
}

void open_shared_memory(lua_State* L) {
  luaL_newmetatable(L, kSharedStorageType);
  lua_pushcfunction(L, storage_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
}

}  // namespace tutti::lua
