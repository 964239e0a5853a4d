// The collective and point-to-point calls of tutti.h. Each builds a Call from its
// arguments and hands it to the communicator; validation happens in the runtime so
// that every binding gets the same messages.
#include <cstdint>
#include <vector>

#include "capi/c_enum.h"
#include "capi/guard.h"
#include "capi/handle.h"
#include "capi/work_handles.h"
#include "runtime/operation/dtype.h"

using tutti::Call;
using tutti::Kind;
using tutti::capi::c_enum_value;

static_assert(static_cast<int>(tutti::Dtype::kInt8) == TUTTI_DTYPE_INT8 &&
                  static_cast<int>(tutti::Dtype::kUint8) == TUTTI_DTYPE_UINT8 &&
                  static_cast<int>(tutti::Dtype::kInt32) == TUTTI_DTYPE_INT32 &&
                  static_cast<int>(tutti::Dtype::kInt64) == TUTTI_DTYPE_INT64 &&
                  static_cast<int>(tutti::Dtype::kFloat16) == TUTTI_DTYPE_FLOAT16 &&
                  static_cast<int>(tutti::Dtype::kBfloat16) == TUTTI_DTYPE_BFLOAT16 &&
                  static_cast<int>(tutti::Dtype::kFloat32) == TUTTI_DTYPE_FLOAT32 &&
                  static_cast<int>(tutti::Dtype::kFloat64) == TUTTI_DTYPE_FLOAT64 &&
                  static_cast<int>(tutti::Dtype::kFloat8E4m3) == TUTTI_DTYPE_FLOAT8_E4M3 &&
                  static_cast<int>(tutti::Dtype::kFloat8E5m2) == TUTTI_DTYPE_FLOAT8_E5M2,
              "runtime/operation/dtype.h and tutti.h disagree on dtypes");
static_assert(static_cast<int>(tutti::ReduceOp::kSum) == TUTTI_OP_SUM &&
                  static_cast<int>(tutti::ReduceOp::kProd) == TUTTI_OP_PROD &&
                  static_cast<int>(tutti::ReduceOp::kMin) == TUTTI_OP_MIN &&
                  static_cast<int>(tutti::ReduceOp::kMax) == TUTTI_OP_MAX &&
                  static_cast<int>(tutti::ReduceOp::kAvg) == TUTTI_OP_AVG,
              "runtime/operation/dtype.h and tutti.h disagree on ops");

namespace {

// Blocking when work is NULL; otherwise *work receives the operation's handle.
tutti_status issue(tutti_comm* handle, const Call& call, tutti_work** work, const char* api) {
  if (work != nullptr) *work = nullptr;
  tutti::comm::Comm* comm = tutti::capi::live_comm(handle, api);
  if (comm == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  return tutti::capi::guarded(api, [&] {
    auto operation = comm->issue(call, api, work != nullptr);
    if (work != nullptr) *work = tutti::capi::work_handles::add(std::move(operation));
  });
}

// dtype: the tutti_dtype argument as an int (c_enum.h).
Call make_call(Kind kind, const void* send, void* recv, size_t count, int32_t dtype) {
  Call call;
  call.kind = kind;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.dtype = dtype;
  return call;
}

// The elements of counts (size entries), saturating: the count of an all_to_allv is
// what this rank sends in all, for its trace and history. 0 for NULL.
size_t sum(const size_t* counts, size_t size) {
  size_t total = 0;
  for (size_t i = 0; counts != nullptr && i < size; ++i) {
    if (__builtin_add_overflow(total, counts[i], &total)) return SIZE_MAX;
  }
  return total;
}

// Writes into `into` (size entries) the packed offsets of counts: each the sum of the
// counts before it, saturating, so that a sum past the address space is refused by
// validation as an offset that overflows. NULL for NULL counts (which validation
// refuses).
const size_t* packed_offsets(const size_t* counts, size_t size, size_t* into) {
  if (counts == nullptr) return nullptr;
  size_t offset = 0;
  for (size_t i = 0; i < size; ++i) {
    into[i] = offset;
    if (__builtin_add_overflow(offset, counts[i], &offset)) offset = SIZE_MAX;
  }
  return into;
}

}  // namespace

extern "C" {

TUTTI_API tutti_status tutti_all_reduce(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                        tutti_op op, tutti_work** work) {
  Call call = make_call(Kind::kAllReduce, send, recv, count, c_enum_value(dtype));
  call.op = c_enum_value(op);
  return issue(comm, call, work, "tutti_all_reduce");
}

TUTTI_API tutti_status tutti_reduce(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                    tutti_op op, int32_t root, tutti_work** work) {
  Call call = make_call(Kind::kReduce, send, recv, count, c_enum_value(dtype));
  call.op = c_enum_value(op);
  call.root = root;
  return issue(comm, call, work, "tutti_reduce");
}

TUTTI_API tutti_status tutti_broadcast(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                       int32_t root, tutti_work** work) {
  Call call = make_call(Kind::kBroadcast, send, recv, count, c_enum_value(dtype));
  call.root = root;
  return issue(comm, call, work, "tutti_broadcast");
}

TUTTI_API tutti_status tutti_all_gather(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                        tutti_work** work) {
  return issue(comm, make_call(Kind::kAllGather, send, recv, count, c_enum_value(dtype)), work, "tutti_all_gather");
}

TUTTI_API tutti_status tutti_reduce_scatter(tutti_comm* comm, const void* send, void* recv, size_t count,
                                            tutti_dtype dtype, tutti_op op, tutti_work** work) {
  Call call = make_call(Kind::kReduceScatter, send, recv, count, c_enum_value(dtype));
  call.op = c_enum_value(op);
  return issue(comm, call, work, "tutti_reduce_scatter");
}

TUTTI_API tutti_status tutti_gather(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                    int32_t root, tutti_work** work) {
  Call call = make_call(Kind::kGather, send, recv, count, c_enum_value(dtype));
  call.root = root;
  return issue(comm, call, work, "tutti_gather");
}

TUTTI_API tutti_status tutti_scatter(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                     int32_t root, tutti_work** work) {
  Call call = make_call(Kind::kScatter, send, recv, count, c_enum_value(dtype));
  call.root = root;
  return issue(comm, call, work, "tutti_scatter");
}

TUTTI_API tutti_status tutti_all_to_all(tutti_comm* comm, const void* send, void* recv, size_t count, tutti_dtype dtype,
                                        tutti_work** work) {
  return issue(comm, make_call(Kind::kAllToAll, send, recv, count, c_enum_value(dtype)), work, "tutti_all_to_all");
}

TUTTI_API tutti_status tutti_all_to_allv(tutti_comm* comm, const void* send, const size_t* send_counts,
                                         const size_t* send_offsets, void* recv, const size_t* recv_counts,
                                         const size_t* recv_offsets, tutti_dtype dtype, tutti_work** work) {
  constexpr const char* kApi = "tutti_all_to_allv";
  if (work != nullptr) *work = nullptr;
  tutti::comm::Comm* live = tutti::capi::live_comm(comm, kApi);
  if (live == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  const auto size = static_cast<size_t>(live->size());
  // NULL offsets become packed ones here, so that the runtime sees one form; they live
  // until the call returns (an asynchronous operation keeps copies).
  std::vector<size_t> packed(send_offsets != nullptr && recv_offsets != nullptr ? 0 : 2 * size);
  Call call = make_call(Kind::kAllToAllV, send, recv, sum(send_counts, size), c_enum_value(dtype));
  call.per_peer = tutti::PerPeer{
      send_counts, send_offsets ? send_offsets : packed_offsets(send_counts, size, packed.data()), recv_counts,
      recv_offsets ? recv_offsets : packed_offsets(recv_counts, size, packed.data() + size)};
  return issue(comm, call, work, kApi);
}

TUTTI_API tutti_status tutti_barrier(tutti_comm* comm, tutti_work** work) {
  return issue(comm, make_call(Kind::kBarrier, nullptr, nullptr, 0, TUTTI_DTYPE_UINT8), work, "tutti_barrier");
}

TUTTI_API tutti_status tutti_send(tutti_comm* comm, const void* send, size_t count, tutti_dtype dtype, int32_t peer,
                                  int32_t tag, tutti_work** work) {
  Call call = make_call(Kind::kSend, send, nullptr, count, c_enum_value(dtype));
  call.root = peer;
  call.tag = tag;
  return issue(comm, call, work, "tutti_send");
}

TUTTI_API tutti_status tutti_recv(tutti_comm* comm, void* recv, size_t count, tutti_dtype dtype, int32_t peer,
                                  int32_t tag, tutti_work** work) {
  Call call = make_call(Kind::kRecv, nullptr, recv, count, c_enum_value(dtype));
  call.root = peer;
  call.tag = tag;
  return issue(comm, call, work, "tutti_recv");
}

}  // extern "C"
