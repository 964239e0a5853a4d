// NCCL's part of the device path: tutti's calls as NCCL calls on the communicator's
// stream. gather, scatter, all_to_all and all_to_allv, which NCCL lacks, are grouped sends and
// receives (as torch's ProcessGroupNCCL builds them).
#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/device/nccl/nccl_device_path.h"

namespace tutti::device::nccl {
namespace {

#if NCCL_VERSION_CODE >= 22400
constexpr ncclDataType_t kNcclFloat8e4m3 = ncclFloat8e4m3;
constexpr ncclDataType_t kNcclFloat8e5m2 = ncclFloat8e5m2;
#else
// This nccl.h predates fp8, but the NCCL loaded at run time may not: route.cc sends an
// fp8 reduction here only when every rank's is 2.24 or later, whose nccl.h gives these
// values (NCCL never renumbers its dtypes).
constexpr auto kNcclFloat8e4m3 = static_cast<ncclDataType_t>(10);
constexpr auto kNcclFloat8e5m2 = static_cast<ncclDataType_t>(11);
#endif

// The NCCL dtype of a call's elements. fp8 that is only moved goes as bytes, which
// every NCCL has; fp8 reductions need NCCL 2.24 (route.cc checks).
ncclDataType_t nccl_dtype(const Call& call) {
  const auto dtype = static_cast<Dtype>(call.dtype);
  if (dtype == Dtype::kFloat8E4m3 || dtype == Dtype::kFloat8E5m2) {
    if (!is_reducing(call.kind)) return ncclUint8;
    return dtype == Dtype::kFloat8E4m3 ? kNcclFloat8e4m3 : kNcclFloat8e5m2;
  }
  switch (dtype) {
    case Dtype::kInt8: return ncclInt8;
    case Dtype::kUint8: return ncclUint8;
    case Dtype::kInt32: return ncclInt32;
    case Dtype::kInt64: return ncclInt64;
    case Dtype::kFloat16: return ncclFloat16;
    case Dtype::kBfloat16: return ncclBfloat16;
    case Dtype::kFloat32: return ncclFloat32;
    case Dtype::kFloat64: return ncclFloat64;
    case Dtype::kFloat8E4m3:
    case Dtype::kFloat8E5m2: break;  // above
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kAvg: return ncclAvg;
  }
  return ncclSum;
}

// The sends and receives of gather, scatter, all_to_all or all_to_allv, between GroupStart and
// GroupEnd; the first failure wins, and the group is always closed.
ncclResult_t enqueue_grouped(const NcclApi& nccl, const Call& call, int rank, int size, ncclComm_t comm,
                             cudaStream_t stream) {
  const ncclDataType_t dtype = nccl_dtype(call);
  const size_t block = call.count * dtype_size(static_cast<Dtype>(call.dtype));
  const char* send = static_cast<const char*>(call.send);
  char* recv = static_cast<char*>(call.recv);
  ncclResult_t first = nccl.GroupStart();
  auto keep = [&first](ncclResult_t result) {
    if (first == ncclSuccess || first == ncclInProgress) first = result == ncclSuccess ? first : result;
  };
  const bool root = rank == call.root;
  // In place on the root, its own block is already where it belongs.
  const size_t own = block * static_cast<size_t>(rank);
  const bool in_place =
      root && send != nullptr && recv != nullptr &&
      ((call.kind == Kind::kGather && send == recv + own) || (call.kind == Kind::kScatter && recv == send + own));
  for (int peer = 0; peer < size; ++peer) {
    const size_t offset = block * static_cast<size_t>(peer);
    const bool self = peer == rank;
    switch (call.kind) {
      case Kind::kGather:
        if (!root) {
          if (peer == call.root) keep(nccl.Send(send, call.count, dtype, peer, comm, stream));
        } else if (!self || !in_place) {
          if (self) keep(nccl.Send(send, call.count, dtype, peer, comm, stream));
          keep(nccl.Recv(recv + offset, call.count, dtype, peer, comm, stream));
        }
        break;
      case Kind::kScatter:
        if (!root) {
          if (peer == call.root) keep(nccl.Recv(recv, call.count, dtype, peer, comm, stream));
        } else if (!self || !in_place) {
          keep(nccl.Send(send + offset, call.count, dtype, peer, comm, stream));
          if (self) keep(nccl.Recv(recv, call.count, dtype, peer, comm, stream));
        }
        break;
      case Kind::kAllToAllV: {
        const PerPeer& blocks = call.per_peer;
        const size_t element = dtype_size(static_cast<Dtype>(call.dtype));
        keep(
            nccl.Send(send + blocks.send_offsets[peer] * element, blocks.send_counts[peer], dtype, peer, comm, stream));
        keep(
            nccl.Recv(recv + blocks.recv_offsets[peer] * element, blocks.recv_counts[peer], dtype, peer, comm, stream));
        break;
      }
      default:  // all_to_all, never in place here (route.h sends that to the staging path)
        keep(nccl.Send(send + offset, call.count, dtype, peer, comm, stream));
        keep(nccl.Recv(recv + offset, call.count, dtype, peer, comm, stream));
        break;
    }
  }
  keep(nccl.GroupEnd());
  return first;
}

ncclResult_t enqueue(const NcclApi& nccl, const Call& call, int rank, int size, ncclComm_t comm, cudaStream_t stream) {
  const ncclDataType_t dtype = nccl_dtype(call);
  // Over one rank the average is the sum, and NCCL's one-rank average (before 2.29.7)
  // leaves the last elements of a count that does not divide evenly unwritten
  // (NVIDIA/nccl#1950; seen on an H100 with NCCL 2.28.9: 17 of 70001 floats).
  const ReduceOp tutti_op = static_cast<ReduceOp>(call.op);
  const ncclRedOp_t op = size == 1 && tutti_op == ReduceOp::kAvg ? ncclSum : nccl_op(tutti_op);
  switch (call.kind) {
    case Kind::kAllReduce: return nccl.AllReduce(call.send, call.recv, call.count, dtype, op, comm, stream);
    case Kind::kReduce: return nccl.Reduce(call.send, call.recv, call.count, dtype, op, call.root, comm, stream);
    case Kind::kBroadcast: return nccl.Broadcast(call.send, call.recv, call.count, dtype, call.root, comm, stream);
    case Kind::kAllGather: return nccl.AllGather(call.send, call.recv, call.count, dtype, comm, stream);
    case Kind::kReduceScatter: return nccl.ReduceScatter(call.send, call.recv, call.count, dtype, op, comm, stream);
    default: return enqueue_grouped(nccl, call, rank, size, comm, stream);
  }
}

}  // namespace

std::shared_ptr<work::Work> NcclDevicePath::enqueue_nccl(const Call& call, const char* api) {
  const int64_t timeout_ms = setup_.engine->op_timeout_ms();
  const uint32_t seq = setup_.engine->enter_device_collective(call);
  std::string label = concat(api, " #", seq, " on ", setup_.where);
  ncclResult_t result = ncclSuccess;
  comm_->use(label, [&](ncclComm_t comm) {
    result = enqueue(*nccl_, call, setup_.rank, setup_.size, comm, stream());
    nccl_->check(result, kind_name(call.kind), label, comm);
  });
  // A non-blocking communicator may still be enqueueing; the event must come after.
  if (result == ncclInProgress) comm_->wait_ready(Deadline::after_ms(timeout_ms), setup_.fault, label);
  return watch(std::make_shared<EventFence>(cuda_, stream(), watchdog_->broken_flag()), std::move(label), seq,
               timeout_ms);
}

}  // namespace tutti::device::nccl
