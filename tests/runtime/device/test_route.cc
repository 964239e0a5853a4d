// Which path serves device buffers (runtime/device/route.cc): the record ranks exchange,
// NCCL only when every rank loaded it and no two share a GPU, and the calls NCCL
// cannot run as tutti defines them.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "runtime/device/route.h"

using tutti::Call;
using tutti::Dtype;
using tutti::Kind;
using tutti::ReduceOp;
using tutti::device::RankGpu;

namespace {

constexpr int kNccl2_28 = 22809;

Call reducing(Kind kind, Dtype dtype, ReduceOp op) {
  static float send[4], recv[4];
  Call call;
  call.kind = kind;
  call.send = send;
  call.recv = recv;
  call.count = 4;
  call.dtype = static_cast<int32_t>(dtype);
  call.op = static_cast<int32_t>(op);
  return call;
}

// A route through NCCL of version on GPUs of compute capability (Hopper's by default).
tutti::device::Route nccl(int version, int compute_capability = 90) {
  tutti::device::Route route;
  route.nccl = true;
  route.nccl_version = version;
  route.compute_capability = compute_capability;
  return route;
}

}  // namespace

Test(route, a_rank_record_round_trips_and_bad_ones_are_refused) {
  RankGpu gpu{"00112233445566778899aabbccddeeff", kNccl2_28, 90};
  auto back = tutti::device::decode_rank_gpu(tutti::device::encode(gpu));
  cr_assert(back.has_value());
  cr_assert_str_eq(back->uuid.c_str(), gpu.uuid.c_str());
  cr_assert_eq(back->nccl_version, kNccl2_28);
  cr_assert_eq(back->compute_capability, 90);
  auto unknown = tutti::device::decode_rank_gpu(tutti::device::encode(RankGpu{"", 0}));
  cr_assert(unknown.has_value());
  cr_assert(unknown->uuid.empty());
  cr_assert(!tutti::device::decode_rank_gpu("").has_value());
  cr_assert(!tutti::device::decode_rank_gpu("x y").has_value());
  cr_assert(!tutti::device::decode_rank_gpu("-3 abc 90").has_value());
  cr_assert(!tutti::device::decode_rank_gpu("22809 abc").has_value(), "a record without the compute capability");
}

Test(route, distinct_gpus_with_nccl_everywhere_take_nccl_at_the_lowest_version) {
  std::vector<RankGpu> ranks = {{"aa", 22809, 90}, {"bb", 21903, 80}, {"cc", 22809, 100}};
  auto route = tutti::device::choose_route(ranks, "");
  cr_assert(route.nccl);
  cr_assert_eq(route.nccl_version, 21903);
  cr_assert_eq(route.compute_capability, 80, "the lowest GPU decides what NCCL can reduce");
  cr_assert(route.why_staged.empty());
  cr_assert(tutti::device::shared_gpus(ranks).empty());
}

Test(route, ranks_sharing_a_gpu_are_named_and_staged) {
  std::vector<RankGpu> ranks = {{"aa", kNccl2_28}, {"bb", kNccl2_28}, {"aa", kNccl2_28}, {"bb", kNccl2_28}};
  std::string shared = tutti::device::shared_gpus(ranks);
  cr_assert_str_eq(shared.c_str(), "ranks 0, 2 share GPU aa; ranks 1, 3 share GPU bb");
  auto route = tutti::device::choose_route(ranks, "");
  cr_assert(!route.nccl);
  cr_assert(route.why_staged.find("ranks 0, 2 share GPU aa") != std::string::npos, "%s", route.why_staged.c_str());
  cr_assert(route.why_staged.find("NCCL refuses one GPU twice") != std::string::npos);
}

Test(route, one_world_on_one_gpu_is_staged) {
  std::vector<RankGpu> ranks(4, RankGpu{"aa", kNccl2_28});
  auto route = tutti::device::choose_route(ranks, "");
  cr_assert(!route.nccl);
  cr_assert(route.why_staged.find("ranks 0, 1, 2, 3 share GPU aa") != std::string::npos, "%s",
            route.why_staged.c_str());
}

Test(route, a_rank_without_nccl_stages_every_rank_and_says_why) {
  std::vector<RankGpu> ranks = {{"aa", kNccl2_28}, {"bb", 0}, {"cc", 0}};
  auto route = tutti::device::choose_route(ranks, "cannot load libnccl.so.2: not found");
  cr_assert(!route.nccl);
  cr_assert(route.why_staged.find("NCCL could not be loaded on ranks 1, 2") != std::string::npos, "%s",
            route.why_staged.c_str());
  cr_assert(route.why_staged.find("cannot load libnccl.so.2") != std::string::npos);
}

Test(route, nccl_runs_every_dtype_and_op_it_has) {
  const Dtype dtypes[] = {Dtype::kInt8,     Dtype::kUint8,   Dtype::kInt32,   Dtype::kInt64,      Dtype::kFloat16,
                          Dtype::kBfloat16, Dtype::kFloat32, Dtype::kFloat64, Dtype::kFloat8E4m3, Dtype::kFloat8E5m2};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};
  const Kind kinds[] = {Kind::kAllReduce, Kind::kReduce, Kind::kReduceScatter};
  for (Kind kind : kinds) {
    for (Dtype dtype : dtypes) {
      for (ReduceOp op : ops) cr_assert_null(tutti::device::nccl_lacks(reducing(kind, dtype, op), nccl(kNccl2_28)));
    }
  }
  cr_assert_null(
      tutti::device::nccl_lacks(reducing(Kind::kAllReduce, Dtype::kFloat32, ReduceOp::kAvg), nccl(kNccl2_28)));
  cr_assert_null(
      tutti::device::nccl_lacks(reducing(Kind::kAllReduce, Dtype::kBfloat16, ReduceOp::kAvg), nccl(kNccl2_28)));
  const Kind others[] = {Kind::kBroadcast, Kind::kAllGather, Kind::kGather, Kind::kScatter, Kind::kAllToAll};
  for (Kind kind : others)
    cr_assert_null(tutti::device::nccl_lacks(reducing(kind, Dtype::kInt64, ReduceOp::kSum), nccl(kNccl2_28)));
}

Test(route, what_nccl_lacks_goes_to_the_staging_path) {
  // Before 2.10: no bfloat16, no average.
  cr_assert_not_null(
      tutti::device::nccl_lacks(reducing(Kind::kAllReduce, Dtype::kBfloat16, ReduceOp::kSum), nccl(20907)));
  cr_assert_not_null(
      tutti::device::nccl_lacks(reducing(Kind::kBroadcast, Dtype::kBfloat16, ReduceOp::kSum), nccl(20907)));
  cr_assert_not_null(
      tutti::device::nccl_lacks(reducing(Kind::kAllReduce, Dtype::kFloat32, ReduceOp::kAvg), nccl(20907)));
  cr_assert_null(tutti::device::nccl_lacks(reducing(Kind::kAllReduce, Dtype::kFloat32, ReduceOp::kSum), nccl(20907)));
  // An integer average rounds as tutti's host collectives do.
  cr_assert_not_null(
      tutti::device::nccl_lacks(reducing(Kind::kReduce, Dtype::kInt32, ReduceOp::kAvg), nccl(kNccl2_28)));
  // fp8: reductions from NCCL 2.24, and never an average (NCCL scales each input by an
  // fp8 1/ranks); moving fp8 is moving bytes, which any NCCL does.
  for (const Dtype fp8 : {Dtype::kFloat8E4m3, Dtype::kFloat8E5m2}) {
    cr_assert_not_null(tutti::device::nccl_lacks(reducing(Kind::kAllReduce, fp8, ReduceOp::kSum), nccl(22309)));
    cr_assert_null(tutti::device::nccl_lacks(reducing(Kind::kAllReduce, fp8, ReduceOp::kSum), nccl(22400)));
    cr_assert_not_null(tutti::device::nccl_lacks(reducing(Kind::kReduceScatter, fp8, ReduceOp::kAvg), nccl(kNccl2_28)));
    cr_assert_null(tutti::device::nccl_lacks(reducing(Kind::kBroadcast, fp8, ReduceOp::kSum), nccl(20907)));
    cr_assert_null(tutti::device::nccl_lacks(reducing(Kind::kAllGather, fp8, ReduceOp::kSum), nccl(20907)));
    // Before Hopper (an A100 is 8.0, an L40S 8.9), or on a GPU whose capability is
    // unknown: NCCL has no fp8 reduction kernels there, but moves fp8 all the same.
    for (int capability : {0, 80, 89}) {
      const char* why =
          tutti::device::nccl_lacks(reducing(Kind::kAllReduce, fp8, ReduceOp::kMax), nccl(kNccl2_28, capability));
      cr_assert(why != nullptr && std::string(why).find("compute capability 9.0") != std::string::npos);
      cr_assert_null(
          tutti::device::nccl_lacks(reducing(Kind::kAllGather, fp8, ReduceOp::kSum), nccl(kNccl2_28, capability)));
    }
  }
  // Tags, in-place all_to_all, barriers.
  cr_assert_not_null(
      tutti::device::nccl_lacks(reducing(Kind::kSend, Dtype::kFloat32, ReduceOp::kSum), nccl(kNccl2_28)));
  cr_assert_not_null(
      tutti::device::nccl_lacks(reducing(Kind::kRecv, Dtype::kFloat32, ReduceOp::kSum), nccl(kNccl2_28)));
  Call in_place = reducing(Kind::kAllToAll, Dtype::kFloat32, ReduceOp::kSum);
  in_place.recv = const_cast<void*>(in_place.send);
  cr_assert_not_null(tutti::device::nccl_lacks(in_place, nccl(kNccl2_28)));
  Call barrier;
  cr_assert_not_null(tutti::device::nccl_lacks(barrier, nccl(kNccl2_28)));
}
