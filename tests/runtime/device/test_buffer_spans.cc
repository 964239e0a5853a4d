// How many bytes of each buffer a call uses on one rank (runtime/device/buffer_spans.cc),
// which the staging path copies: per kind, on the root and off it.
#include <criterion/criterion.h>

#include "runtime/device/buffer_spans.h"

using tutti::Call;
using tutti::Dtype;
using tutti::Kind;
using tutti::device::spans_of;

namespace {

Call call_of(Kind kind, int root = 0) {
  Call call;
  call.kind = kind;
  call.count = 3;
  call.dtype = static_cast<int32_t>(Dtype::kFloat64);  // 24 bytes per rank's block
  call.root = root;
  return call;
}

void expect(Kind kind, int rank, size_t send, size_t recv) {
  auto spans = spans_of(call_of(kind, 1), rank, 4);
  cr_assert_eq(spans.send_bytes, send, "%s on rank %d: send %zu, expected %zu", tutti::kind_name(kind), rank,
               spans.send_bytes, send);
  cr_assert_eq(spans.recv_bytes, recv, "%s on rank %d: recv %zu, expected %zu", tutti::kind_name(kind), rank,
               spans.recv_bytes, recv);
}

}  // namespace

Test(buffer_spans, every_kind_on_the_root_and_off_it) {
  // World of 4, root 1, blocks of 24 bytes.
  expect(Kind::kAllReduce, 0, 24, 24);
  expect(Kind::kReduce, 1, 24, 24);
  expect(Kind::kReduce, 0, 24, 0);
  expect(Kind::kBroadcast, 1, 24, 24);
  expect(Kind::kBroadcast, 2, 0, 24);
  expect(Kind::kAllGather, 3, 24, 96);
  expect(Kind::kReduceScatter, 3, 96, 24);
  expect(Kind::kGather, 1, 24, 96);
  expect(Kind::kGather, 0, 24, 0);
  expect(Kind::kScatter, 1, 96, 24);
  expect(Kind::kScatter, 2, 0, 24);
  expect(Kind::kAllToAll, 2, 96, 96);
  expect(Kind::kSend, 0, 24, 0);
  expect(Kind::kRecv, 0, 0, 24);
  expect(Kind::kBarrier, 0, 0, 0);
}

Test(buffer_spans, all_to_allv_spans_up_to_the_end_of_its_highest_block) {
  // Blocks in reverse order with gaps; an empty block's offset counts for nothing.
  const size_t send_counts[4] = {2, 0, 1, 3}, send_offsets[4] = {9, 100, 5, 0};
  const size_t recv_counts[4] = {1, 1, 0, 0}, recv_offsets[4] = {4, 0, 50, 60};
  Call call = call_of(Kind::kAllToAllV);
  call.per_peer = tutti::PerPeer{send_counts, send_offsets, recv_counts, recv_offsets};
  auto spans = spans_of(call, 0, 4);
  cr_assert_eq(spans.send_bytes, 11 * 8, "send %zu", spans.send_bytes);
  cr_assert_eq(spans.recv_bytes, 5 * 8, "recv %zu", spans.recv_bytes);
}
