#include "runtime/device/route.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "runtime/common/concat.h"

namespace tutti::device {
namespace {

// NCCL 2.10 brought ncclAvg and ncclBfloat16, 2.24 ncclFloat8e4m3 and ncclFloat8e5m2;
// version codes are major*10000 + minor*100 + patch since 2.9.
constexpr int kNccl2_10 = 21000;
constexpr int kNccl2_24 = 22400;
// NCCL's fp8 reduction kernels are built for sm_90 and up; elsewhere it refuses them.
constexpr int kHopper = 90;

bool is_integer(Dtype dtype) {
  return dtype == Dtype::kInt8 || dtype == Dtype::kUint8 || dtype == Dtype::kInt32 || dtype == Dtype::kInt64;
}

}  // namespace

std::string encode(const RankGpu& gpu) {
  return concat(gpu.nccl_version, " ", gpu.uuid.empty() ? "-" : gpu.uuid, " ", gpu.compute_capability);
}

std::optional<RankGpu> decode_rank_gpu(const std::string& text) {
  RankGpu gpu;
  char uuid[80];
  if (sscanf(text.c_str(), "%d %79s %d", &gpu.nccl_version, uuid, &gpu.compute_capability) != 3 ||
      gpu.nccl_version < 0 || gpu.compute_capability < 0) {
    return std::nullopt;
  }
  gpu.uuid = std::string(uuid) == "-" ? "" : uuid;
  return gpu;
}

std::string shared_gpus(const std::vector<RankGpu>& ranks) {
  std::map<std::string, std::vector<int>> by_uuid;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    if (!ranks[rank].uuid.empty()) by_uuid[ranks[rank].uuid].push_back(static_cast<int>(rank));
  }
  std::string text;
  for (const auto& [uuid, members] : by_uuid) {
    if (members.size() < 2) continue;
    if (!text.empty()) text += "; ";
    text += "ranks ";
    for (size_t i = 0; i < members.size(); ++i) text += concat(i ? ", " : "", members[i]);
    text += concat(" share GPU ", uuid);
  }
  return text;
}

Route choose_route(const std::vector<RankGpu>& ranks, const std::string& why_not_loaded) {
  Route route;
  std::string missing;
  int lowest = 0;
  int capability = ranks.empty() ? 0 : ranks[0].compute_capability;
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    int version = ranks[rank].nccl_version;
    if (version == 0) missing += concat(missing.empty() ? "" : ", ", rank);
    if (lowest == 0 || (version != 0 && version < lowest)) lowest = version;
    capability = std::min(capability, ranks[rank].compute_capability);
  }
  if (!missing.empty()) {
    route.why_staged = concat("NCCL could not be loaded on ranks ", missing,
                              why_not_loaded.empty() ? "" : concat(" (here: ", why_not_loaded, ")"));
    return route;
  }
  std::string shared = shared_gpus(ranks);
  if (!shared.empty()) {
    route.why_staged = concat(shared, ", and NCCL refuses one GPU twice in a communicator");
    return route;
  }
  route.nccl = true;
  route.nccl_version = lowest;
  route.compute_capability = capability;
  return route;
}

const char* nccl_lacks(const Call& call, const Route& route) {
  const int version = route.nccl_version;
  if (call.kind == Kind::kBarrier) return "a barrier has no buffers for NCCL";
  if (is_point_to_point(call.kind)) return "NCCL's sends and receives have no tags";
  if (call.kind == Kind::kAllToAll && call.send == call.recv) return "NCCL has no all_to_all in place";
  const auto dtype = static_cast<Dtype>(call.dtype);
  if (dtype == Dtype::kBfloat16 && version < kNccl2_10) return "NCCL before 2.10 has no bfloat16";
  // A collective that only moves fp8 moves bytes, which any NCCL does (enqueue.cc
  // passes them as uint8).
  const bool fp8 = dtype == Dtype::kFloat8E4m3 || dtype == Dtype::kFloat8E5m2;
  if (fp8 && is_reducing(call.kind) && version < kNccl2_24) return "NCCL before 2.24 has no fp8 reductions";
  if (fp8 && is_reducing(call.kind) && route.compute_capability < kHopper) {
    return "NCCL reduces fp8 on GPUs of compute capability 9.0 and up only";
  }
  if (!is_reducing(call.kind) || static_cast<ReduceOp>(call.op) != ReduceOp::kAvg) return nullptr;
  if (version < kNccl2_10) return "NCCL before 2.10 has no average";
  if (is_integer(dtype)) return "tutti averages integers on the host (the sum, then a truncating division)";
  if (fp8) return "NCCL averages fp8 by scaling each input by 1/ranks rounded to fp8, before the sum";
  return nullptr;
}

}  // namespace tutti::device
