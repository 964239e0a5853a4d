// Validation of collective calls (what every binding's bad input turns into) and the
// algorithm selector with its TUTTI_ALGO override.
#include <criterion/criterion.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/collectives/call.h"
#include "runtime/collectives/selector.h"
#include "runtime/common/error.h"

using namespace tutti::collectives;

namespace {

std::string rejection(const Call& call, int rank, int size) {
  try {
    validate(call, rank, size, "tutti_test");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kInvalidArgument);
    return error.what();
  }
  cr_assert_fail("call to %s was accepted", kind_name(call.kind));
  return "";
}

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

Call all_reduce(const void* send, void* recv, size_t count) {
  Call call;
  call.kind = Kind::kAllReduce;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.dtype = static_cast<int32_t>(Dtype::kFloat32);
  return call;
}

std::string forced_error(const char* value) {
  setenv("TUTTI_ALGO", value, 1);
  try {
    Selector::from_environment();
  } catch (const tutti::Error& error) {
    return error.what();
  }
  cr_assert_fail("TUTTI_ALGO=%s was accepted", value);
  return "";
}

}  // namespace

Test(call, accepts_well_formed_calls_and_in_place_forms, .timeout = 10) {
  float a[16], b[64];
  validate(all_reduce(a, b, 16), 0, 4, "t");
  validate(all_reduce(a, a, 16), 0, 4, "t");  // in place
  validate(all_reduce(nullptr, nullptr, 0), 0, 4, "t");
  Call gather = all_reduce(b + 2 * 4, b, 4);  // rank 2's block of the full buffer
  gather.kind = Kind::kAllGather;
  validate(gather, 2, 4, "t");
  cr_assert(is_in_place(gather, 2, 4));
  Call scatter = all_reduce(b, b + 3 * 4, 4);
  scatter.kind = Kind::kReduceScatter;
  validate(scatter, 3, 4, "t");
  Call reduce = all_reduce(a, nullptr, 16);  // recv unused off the root
  reduce.kind = Kind::kReduce;
  reduce.root = 1;
  validate(reduce, 0, 4, "t");
  Call bcast = all_reduce(nullptr, a, 16);  // send unused off the root
  bcast.kind = Kind::kBroadcast;
  validate(bcast, 2, 4, "t");
}

Test(call, rejects_bad_input_naming_the_argument, .timeout = 10) {
  float a[16], b[64];
  cr_assert(contains(rejection(all_reduce(nullptr, b, 4), 0, 2), "send buffer is NULL"));
  cr_assert(contains(rejection(all_reduce(a, nullptr, 4), 0, 2), "receive buffer is NULL"));
  Call bad_dtype = all_reduce(a, b, 4);
  bad_dtype.dtype = 99;
  cr_assert(contains(rejection(bad_dtype, 0, 2), "dtype 99"));
  Call bad_op = all_reduce(a, b, 4);
  bad_op.op = -3;
  cr_assert(contains(rejection(bad_op, 0, 2), "op -3"));
  Call bad_root = all_reduce(a, b, 4);
  bad_root.kind = Kind::kBroadcast;
  bad_root.root = 2;
  cr_assert(contains(rejection(bad_root, 0, 2), "root 2 is out of range"));
  bad_root.root = -1;
  cr_assert(contains(rejection(bad_root, 0, 2), "root -1"));
  Call overlap = all_reduce(b, b + 2, 8);
  cr_assert(contains(rejection(overlap, 0, 2), "overlap"));
  Call gather = all_reduce(b, b, 4);  // rank 1's block is at b + 4, not b
  gather.kind = Kind::kAllGather;
  cr_assert(contains(rejection(gather, 1, 4), "overlap"));
  Call send;
  send.kind = Kind::kSend;
  send.send = a;
  send.count = 1;
  send.dtype = static_cast<int32_t>(Dtype::kFloat32);
  send.root = 5;
  cr_assert(contains(rejection(send, 0, 2), "peer 5"));
  send.root = 1;
  send.tag = -1;
  cr_assert(contains(rejection(send, 0, 2), "tag -1"));
  Call huge = all_reduce(a, b, SIZE_MAX / 2);
  cr_assert(contains(rejection(huge, 0, 2), "overflows"));
}

// A count whose bytes fit in size_t but whose end, added to the address, wraps past
// 2^64: the overlap check would compare a wrapped end, so the buffer is refused first.
Test(call, rejects_a_buffer_that_runs_past_the_end_of_the_address_space, .timeout = 10) {
  const auto* high = reinterpret_cast<const float*>(uintptr_t{0x7f0000000000});
  float b[4];
  Call send;
  send.kind = Kind::kSend;
  send.send = high;
  send.count = SIZE_MAX / 4;  // SIZE_MAX - 3 bytes: no overflow in count * 4
  send.dtype = static_cast<int32_t>(Dtype::kFloat32);
  send.root = 1;
  std::string why = rejection(send, 0, 2);
  cr_assert(contains(why, "send buffer") && contains(why, "past the end of the address space"), "%s", why.c_str());
  Call recv = send;
  recv.kind = Kind::kRecv;
  recv.send = nullptr;
  recv.recv = const_cast<float*>(high);
  why = rejection(recv, 0, 2);
  cr_assert(contains(why, "receive buffer") && contains(why, "past the end of the address space"), "%s", why.c_str());
  // Ending exactly at 2^64 wraps the end to 0 just the same.
  Call top = all_reduce(b, reinterpret_cast<float*>(UINTPTR_MAX - 15), 4);
  cr_assert(contains(rejection(top, 0, 2), "past the end of the address space"));
  // One byte short of the top is an ordinary buffer.
  validate(all_reduce(b, reinterpret_cast<float*>(UINTPTR_MAX - 16), 4), 0, 2, "t");
}

Test(selector, picks_shared_memory_on_one_node_and_by_size_elsewhere, .timeout = 10) {
  unsetenv("TUTTI_ALGO");
  Selector selector = Selector::from_environment();
  cr_assert(selector.choose(Kind::kAllReduce, 8, 4, true, false) == Algorithm::kShm);
  cr_assert(selector.choose(Kind::kAllReduce, 8, 4, false, false) == Algorithm::kRecursiveDoubling);
  cr_assert(selector.choose(Kind::kAllReduce, 16 << 20, 4, false, false) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kBarrier, 0, 4, false, false) == Algorithm::kDissemination);
  cr_assert(selector.choose(Kind::kSend, 8, 4, true, false) == Algorithm::kDirect);
  // Several nodes alike: all_reduce takes the hierarchy above kSmallMessageBytes only.
  cr_assert(selector.choose(Kind::kAllReduce, tutti::collectives::kSmallMessageBytes, 8, false, true) ==
            Algorithm::kRecursiveDoubling);
  cr_assert(selector.choose(Kind::kAllReduce, tutti::collectives::kSmallMessageBytes + 1, 8, false, true) ==
            Algorithm::kHierarchical);
  // Broadcast when small or large; all_gather and reduce_scatter up to
  // kHierarchicalBlockBytes a rank.
  cr_assert(selector.choose(Kind::kBroadcast, 8, 4, false, true) == Algorithm::kHierarchical);
  cr_assert(selector.choose(Kind::kBroadcast, tutti::collectives::kHierarchicalBroadcastEagerBytes, 4, false, true) ==
            Algorithm::kHierarchical);
  cr_assert(selector.choose(Kind::kBroadcast, tutti::collectives::kHierarchicalBroadcastEagerBytes + 1, 4, false,
                            true) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kBroadcast, tutti::collectives::kSmallMessageBytes, 8, false, true) ==
            Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kBroadcast, tutti::collectives::kSmallMessageBytes + 1, 4, false, true) ==
            Algorithm::kHierarchical);
  for (Kind kind : {Kind::kAllGather, Kind::kReduceScatter}) {
    cr_assert(selector.choose(kind, 8, 8, false, true) == Algorithm::kHierarchical);
    cr_assert(selector.choose(kind, tutti::collectives::kHierarchicalBlockBytes, 8, false, true) ==
              Algorithm::kHierarchical);
    cr_assert(selector.choose(kind, tutti::collectives::kHierarchicalBlockBytes + 1, 8, false, true) ==
              Algorithm::kRing);
  }
  cr_assert(selector.choose(Kind::kReduce, 16 << 20, 8, false, true) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kAllToAll, 8, 8, false, true) == Algorithm::kPairwise);
  // Broadcast keeps its binomial tree below 8 ranks, whatever the size.
  cr_assert(selector.choose(Kind::kBroadcast, 16 << 20, 7, false, false) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kBroadcast, 16 << 20, 8, false, false) == Algorithm::kScatterAllGather);
  cr_assert(selector.choose(Kind::kBroadcast, 8, 8, false, false) == Algorithm::kBinomial);
}

Test(selector, tutti_algo_forces_a_choice, .timeout = 10) {
  setenv("TUTTI_ALGO", "all_reduce=ring,broadcast=binomial", 1);
  Selector selector = Selector::from_environment();
  cr_assert(selector.choose(Kind::kAllReduce, 8, 4, true, false) == Algorithm::kRing);
  cr_assert(selector.choose(Kind::kBroadcast, 1 << 24, 4, true, false) == Algorithm::kBinomial);
  cr_assert(selector.choose(Kind::kAllGather, 8, 4, true, false) == Algorithm::kShm);
  setenv("TUTTI_ALGO", "all_reduce=shm", 1);
  // One rank has nobody to share memory with: forcing shm there is not an error.
  cr_assert(Selector::from_environment().choose(Kind::kAllReduce, 8, 1, false, false) != Algorithm::kShm);
  try {
    Selector::from_environment().choose(Kind::kAllReduce, 8, 4, false, false);
    cr_assert_fail("shm was chosen without a shared-memory group");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kUnsupported);
  }
  setenv("TUTTI_ALGO", "all_reduce=hierarchical,all_gather=hierarchical,reduce_scatter=hierarchical,broadcast=hierarchical",
         1);
  for (Kind kind : {Kind::kAllReduce, Kind::kAllGather, Kind::kReduceScatter, Kind::kBroadcast}) {
    cr_assert(Selector::from_environment().choose(kind, 16 << 20, 4, false, true) == Algorithm::kHierarchical);
  }
  try {
    Selector::from_environment().choose(Kind::kAllReduce, 8, 4, false, false);
    cr_assert_fail("hierarchical was chosen without a hierarchy");
  } catch (const tutti::Error& error) {
    cr_assert(error.status() == tutti::Status::kUnsupported);
    cr_assert(contains(error.what(), "same number of ranks"), "%s", error.what());
  }
  unsetenv("TUTTI_ALGO");
}

Test(selector, tutti_algo_errors_name_the_choices, .timeout = 10) {
  cr_assert(contains(forced_error("all_reduce=bruck"), "all_reduce: shm recursive_doubling ring hierarchical"));
  cr_assert(contains(forced_error("reduce=hierarchical"), "reduce: shm binomial ring"));
  cr_assert(contains(forced_error("allreduce=ring"), "not a collective"));
  cr_assert(contains(forced_error("ring"), "collective=algorithm"));
  cr_assert(contains(forced_error("send=direct"), "not a collective"));
}
