// The collectives and point-to-point calls with torch.distributed's names and argument
// order, each a thin layer over one tutti_* call:
//   all_reduce(tensor [, op])               reduce(tensor, dst [, op])
//   broadcast(tensor, src)                  all_gather(tensor_list, tensor)
//   reduce_scatter(output, input_list [, op])
//   gather(tensor [, gather_list [, dst]])  scatter(tensor [, scatter_list [, src]])
//   all_to_all(output_tensor_list, input_tensor_list)     barrier()
//   all_to_all_single(output, input [, output_split_sizes [, input_split_sizes]])
//   send(tensor, dst [, tag])  recv(tensor, src [, tag])  isend(...)  irecv(...)
// op is "sum" (default), "prod", "min", "max" or "avg"; dst and src default to 0 where
// torch has a default. Every call takes a last options table: {async = true} returns a
// tutti.work (isend and irecv always do); without it the call blocks (at most the op
// timeout) and returns nothing. Results land in the tensors given, in place, as in
// torch: reduce leaves the other ranks' tensors as they were. gather_list and
// scatter_list are read only on the root, so every rank may pass the same code's list.
// all_reduce, reduce, broadcast and the sends and receives take a tutti.cuda_tensor as
// well (its elements on the GPU); the calls with lists take host tensors only.
#include "bindings/lua/args.h"
#include "bindings/lua/comm.h"
#include "bindings/lua/cuda_tensor.h"
#include "bindings/lua/status.h"
#include "bindings/lua/tensor.h"
#include "bindings/lua/tensor_list.h"
#include "bindings/lua/work.h"

namespace tutti::lua {
namespace {

// One call in progress: whether it is asynchronous, and what its receive buffer must
// be copied into when it ends. Trivially destructible, since a Lua error may unwind it.
struct Call {
  lua_State* L;
  const Target* target;
  bool async;
  tutti_work* work = nullptr;
  int destinations = 0;  // stack index of the snapshot to copy `buffer` into, 0 for none
  const char* buffer = nullptr;
  size_t block_bytes = 0;

  tutti_work** work_out() { return async ? &work : nullptr; }

  // Blocking: raises on failure, copies the results out and returns nothing. Async:
  // returns the Work, which keeps every value on the stack (the arguments, snapshots,
  // buffers) and the communicator until the operation ends.
  int finish(tutti_status status) {
    if (status != TUTTI_OK) raise_status(L, status);
    if (!async) {
      if (destinations != 0) unpack_list(L, destinations, buffer, block_bytes);
      return 0;
    }
    int top = lua_gettop(L);
    lua_createtable(L, top + 1, 0);
    for (int i = 1; i <= top; ++i) {
      lua_pushvalue(L, i);
      lua_rawseti(L, -2, i);
    }
    push_target(L, *target);
    lua_rawseti(L, -2, top + 1);
    if (destinations != 0) {
      lua_pushvalue(L, destinations);
    } else {
      lua_pushnil(L);
    }
    push_work(L, work, destinations != 0 ? buffer : nullptr, block_bytes);
    return 1;
  }

  // Where the list's tensors receive: in place when they lie back to back and the send
  // buffer is either apart from them or where the C API allows it in place
  // (in_place_offset bytes in), else a buffer copied into the list at the end.
  char* receive_into(const TensorList& list, const char* send, size_t send_bytes, size_t in_place_offset) {
    if (list.contiguous != nullptr &&
        (!overlaps(list.contiguous, list.bytes(), send, send_bytes) || send == list.contiguous + in_place_offset)) {
      return list.contiguous;
    }
    char* received = push_buffer(L, list.bytes());
    destinations = list.snapshot;
    buffer = received;
    block_bytes = list.block_bytes;
    return received;
  }

  // The list's tensors as one send buffer, on the same terms.
  const char* send_from(const TensorList& list, const char* recv, size_t recv_bytes, size_t in_place_offset) {
    if (list.contiguous != nullptr &&
        (!overlaps(list.contiguous, list.bytes(), recv, recv_bytes) || recv == list.contiguous + in_place_offset)) {
      return list.contiguous;
    }
    return pack_list(L, list);
  }
};

// Takes the options off the stack (after `required` arguments) and settles the Works
// that were dropped while running and have ended since.
Call start(lua_State* L, const Target& target, int required) {
  CallOptions options = take_options(L, target.first, required);
  sweep_orphans(L);
  return Call{L, &target, options.async};
}

int all_reduce(lua_State* L, const Target& target) {
  Call call = start(L, target, 1);
  Tensor* t = check_buffer(L, target.first, target.comm);
  tutti_op op = opt_op(L, target.first + 1);
  return call.finish(tutti_all_reduce(target.comm, t->data, t->data, t->numel, t->dtype, op, call.work_out()));
}

int reduce(lua_State* L, const Target& target) {
  Call call = start(L, target, 2);
  Tensor* t = check_buffer(L, target.first, target.comm);
  int32_t dst = check_rank(L, target.first + 1, "dst", target_size(target));
  tutti_op op = opt_op(L, target.first + 2);
  void* recv = target_rank(target) == dst ? t->data : nullptr;
  return call.finish(tutti_reduce(target.comm, t->data, recv, t->numel, t->dtype, op, dst, call.work_out()));
}

int broadcast(lua_State* L, const Target& target) {
  Call call = start(L, target, 2);
  Tensor* t = check_buffer(L, target.first, target.comm);
  int32_t src = check_rank(L, target.first + 1, "src", target_size(target));
  const void* send = target_rank(target) == src ? t->data : nullptr;
  return call.finish(tutti_broadcast(target.comm, send, t->data, t->numel, t->dtype, src, call.work_out()));
}

int all_gather(lua_State* L, const Target& target) {
  Call call = start(L, target, 2);
  Tensor* t = check_tensor(L, target.first + 1);
  TensorList list = check_list(L, target.first, "tensor_list", target_size(target), t->numel, t->dtype);
  char* recv = call.receive_into(list, t->data, t->bytes(), list.block_bytes * target_rank(target));
  return call.finish(tutti_all_gather(target.comm, t->data, recv, t->numel, t->dtype, call.work_out()));
}

int reduce_scatter(lua_State* L, const Target& target) {
  Call call = start(L, target, 2);
  Tensor* out = check_tensor(L, target.first);
  TensorList list = check_list(L, target.first + 1, "input_list", target_size(target), out->numel, out->dtype);
  tutti_op op = opt_op(L, target.first + 2);
  const char* send = call.send_from(list, out->data, out->bytes(), list.block_bytes * target_rank(target));
  return call.finish(tutti_reduce_scatter(target.comm, send, out->data, out->numel, out->dtype, op, call.work_out()));
}

int gather(lua_State* L, const Target& target) {
  Call call = start(L, target, 1);
  Tensor* t = check_tensor(L, target.first);
  int32_t dst = opt_rank(L, target.first + 2, "dst", target_size(target), 0);
  char* recv = nullptr;
  if (target_rank(target) == dst) {
    TensorList list = check_list(L, target.first + 1, "gather_list", target_size(target), t->numel, t->dtype);
    recv = call.receive_into(list, t->data, t->bytes(), list.block_bytes * target_rank(target));
  }
  return call.finish(tutti_gather(target.comm, t->data, recv, t->numel, t->dtype, dst, call.work_out()));
}

int scatter(lua_State* L, const Target& target) {
  Call call = start(L, target, 1);
  Tensor* t = check_tensor(L, target.first);
  int32_t src = opt_rank(L, target.first + 2, "src", target_size(target), 0);
  const char* send = nullptr;
  if (target_rank(target) == src) {
    TensorList list = check_list(L, target.first + 1, "scatter_list", target_size(target), t->numel, t->dtype);
    send = call.send_from(list, t->data, t->bytes(), list.block_bytes * target_rank(target));
  }
  return call.finish(tutti_scatter(target.comm, send, t->data, t->numel, t->dtype, src, call.work_out()));
}

int all_to_all(lua_State* L, const Target& target) {
  Call call = start(L, target, 2);
  Tensor* first = nullptr;  // the count and dtype come from the first output tensor
  if (lua_istable(L, target.first)) {
    lua_rawgeti(L, target.first, 1);
    first = to_tensor(L, -1);  // stays alive: the list holds it
    lua_pop(L, 1);
  }
  if (first == nullptr) {
    arg_expected(L, target.first, "output_tensor_list", "a list of tutti.tensor, one per rank");
  }
  int32_t size = target_size(target);
  TensorList in = check_list(L, target.first + 1, "input_tensor_list", size, first->numel, first->dtype);
  TensorList out = check_list(L, target.first, "output_tensor_list", size, first->numel, first->dtype);
  const char* send = call.send_from(in, nullptr, 0, 0);
  char* recv = call.receive_into(out, send, in.bytes(), 0);
  return call.finish(tutti_all_to_all(target.comm, send, recv, first->numel, first->dtype, call.work_out()));
}

// Fills counts[0, size) with the elements of each rank's block of t, the tensor at
// arg - 2 or - 3, named `what`: its rows (first dimension) cut by the table of row
// counts at arg, or, where arg is nil or absent, into equal blocks, as torch's
// all_to_all_single cuts them.
void split_counts(lua_State* L, int arg, const Tensor* t, const char* what, int32_t size, size_t* counts) {
  const int64_t rows = t->ndim > 0 ? t->shape()[0] : t->numel;
  const int64_t per_row = rows > 0 ? t->numel / rows : 0;
  if (lua_isnoneornil(L, arg)) {
    if (rows % size != 0) {
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "%s has %I rows, which the %d ranks cannot share equally; pass %s_split_sizes",
                                    what, static_cast<lua_Integer>(rows), static_cast<int>(size), what));
    }
    for (int32_t i = 0; i < size; ++i) counts[i] = static_cast<size_t>(rows / size * per_row);
    return;
  }
  if (!lua_istable(L, arg) || luaL_len(L, arg) != size) {
    luaL_argerror(L, arg,
                  lua_pushfstring(L, "%s_split_sizes: a list of %d row counts expected, one per rank; got %s", what,
                                  static_cast<int>(size),
                                  lua_istable(L, arg) ? "a list of another length" : luaL_typename(L, arg)));
  }
  int64_t total = 0;
  for (int32_t i = 0; i < size; ++i) {
    lua_rawgeti(L, arg, i + 1);
    int is_integer = 0;
    lua_Integer n = lua_tointegerx(L, -1, &is_integer);
    lua_pop(L, 1);
    if (!is_integer || n < 0 || n > rows) {
      luaL_argerror(L, arg,
                    lua_pushfstring(L, "%s_split_sizes[%d] is not a row count from 0 to %I", what,
                                    static_cast<int>(i + 1), static_cast<lua_Integer>(rows)));
    }
    counts[i] = static_cast<size_t>(n * per_row);
    total += n;
  }
  if (total != rows) {
    luaL_argerror(L, arg,
                  lua_pushfstring(L,
                                  "%s_split_sizes add up to %I rows, but %s has %I; make them add up to its first "
                                  "dimension",
                                  what, static_cast<lua_Integer>(total), what, static_cast<lua_Integer>(rows)));
  }
}

// all_to_all_single(output, input [, output_split_sizes [, input_split_sizes]]): equal
// blocks without split sizes (tutti_all_to_all), else rows cut as the sizes say
// (tutti_all_to_allv; a nil split: equal blocks of its tensor).
int all_to_all_single(lua_State* L, const Target& target) {
  Call call = start(L, target, 2);
  Tensor* out = check_tensor(L, target.first);
  Tensor* in = check_tensor(L, target.first + 1);
  if (in->dtype != out->dtype) {
    luaL_argerror(L, target.first,
                  lua_pushfstring(L, "output is %s but input is %s; give both the same dtype", dtype_name(out->dtype),
                                  dtype_name(in->dtype)));
  }
  const int32_t size = target_size(target);
  if (lua_isnoneornil(L, target.first + 2) && lua_isnoneornil(L, target.first + 3)) {
    if (in->numel != out->numel || in->numel % size != 0) {
      luaL_argerror(L, target.first,
                    lua_pushfstring(L,
                                    "output holds %I elements and input %I; without split sizes both must hold "
                                    "the same number, a multiple of the %d ranks",
                                    static_cast<lua_Integer>(out->numel), static_cast<lua_Integer>(in->numel),
                                    static_cast<int>(size)));
    }
    return call.finish(
        tutti_all_to_all(target.comm, in->data, out->data, in->numel / size, in->dtype, call.work_out()));
  }
  // On the Lua stack, so that an error raised below frees it (and the Work keeps it).
  auto* counts = static_cast<size_t*>(lua_newuserdatauv(L, 2 * static_cast<size_t>(size) * sizeof(size_t), 0));
  split_counts(L, target.first + 3, in, "input", size, counts);
  split_counts(L, target.first + 2, out, "output", size, counts + size);
  return call.finish(tutti_all_to_allv(target.comm, in->data, counts, nullptr, out->data, counts + size, nullptr,
                                       in->dtype, call.work_out()));
}

int barrier(lua_State* L, const Target& target) {
  Call call = start(L, target, 0);
  return call.finish(tutti_barrier(target.comm, call.work_out()));
}

int point_to_point(lua_State* L, const Target& target, bool sending, bool always_async) {
  Call call = start(L, target, 2);
  call.async = call.async || always_async;
  Tensor* t = check_buffer(L, target.first, target.comm);
  int32_t peer = check_rank(L, target.first + 1, sending ? "dst" : "src", target_size(target));
  int32_t tag = opt_tag(L, target.first + 2);
  tutti_status status = sending ? tutti_send(target.comm, t->data, t->numel, t->dtype, peer, tag, call.work_out())
                                : tutti_recv(target.comm, t->data, t->numel, t->dtype, peer, tag, call.work_out());
  return call.finish(status);
}

int send(lua_State* L, const Target& target) { return point_to_point(L, target, true, false); }
int recv(lua_State* L, const Target& target) { return point_to_point(L, target, false, false); }
int isend(lua_State* L, const Target& target) { return point_to_point(L, target, true, true); }
int irecv(lua_State* L, const Target& target) { return point_to_point(L, target, false, true); }

}  // namespace

// Left as written: clang-format 14 reflows this list differently on each run.
// clang-format off
#define TUTTI_LUA_COLLECTIVES(X)                                                                      \
  X(all_reduce) X(reduce) X(broadcast) X(all_gather) X(reduce_scatter) X(gather) X(scatter) X(all_to_all) \
  X(all_to_all_single) X(barrier) X(send) X(recv) X(isend) X(irecv)
// clang-format on
#define TUTTI_LUA_ON_WORLD(name) {#name, on_world<name>},
#define TUTTI_LUA_ON_COMM(name) {#name, on_comm<name>},

extern const luaL_Reg kWorldCollectives[] = {TUTTI_LUA_COLLECTIVES(TUTTI_LUA_ON_WORLD){nullptr, nullptr}};
extern const luaL_Reg kCommCollectives[] = {TUTTI_LUA_COLLECTIVES(TUTTI_LUA_ON_COMM){nullptr, nullptr}};

}  // namespace tutti::lua
