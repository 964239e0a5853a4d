// Validation of collective calls: what every binding's bad input turns into.
#include <criterion/criterion.h>

#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/operation/call.h"

using namespace tutti;

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
