#include "runtime/operation/call.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti {
namespace {

// Builds the message (what() returns it) only when throwing, out of line: validate()
// runs on every call, and strings built in its own frame would cost it a large frame.
template <typename What>
[[noreturn, gnu::cold, gnu::noinline]] void invalid(const char* api, What&& what) {
  fail(Status::kInvalidArgument, concat(api, ": ", what()));
}

// Byte range [begin, end) of a buffer this rank touches, for the overlap check.
struct Extent {
  uintptr_t begin = 0;
  uintptr_t end = 0;
  bool overlaps(const Extent& other) const {
    if (begin == end || other.begin == other.end) return false;
    return begin < other.end && other.begin < end;
  }
};

// The extent of `bytes` at p. A count whose bytes fit in size_t may still put the end
// past the top of the address space, where begin + bytes wraps to a low address: the
// overlap check, and every offset the algorithms add to the pointer, would then be
// wrong, so such a buffer is refused (one add with overflow: validate is on the hot path).
Extent extent(const char* api, const Call& call, const char* which, const void* p, size_t bytes) {
  Extent range{reinterpret_cast<uintptr_t>(p), 0};
  if (__builtin_add_overflow(range.begin, bytes, &range.end)) {
    invalid(api, [&] {
      return concat("the ", which, " buffer at ", p, " with count ", call.count, " of ",
                    dtype_name(static_cast<Dtype>(call.dtype)), " (", bytes,
                    " bytes) would run past the end of the address space; pass the buffer's real address and "
                    "element count");
    });
  }
  return range;
}

// The bytes that an all_to_allv's blocks span in one buffer, from the lowest block to
// the end of the highest; blocks of zero elements take no room. With `blocks`, each
// nonempty block's [begin, end) in bytes from the buffer and its peer, for the
// receive side's disjointness check.
Extent blocks_extent(const char* api, const char* which, const void* p, const size_t* counts, const size_t* offsets,
                     int size, size_t element, std::vector<std::pair<Extent, int>>* blocks) {
  size_t low = SIZE_MAX, high = 0;
  int first_used = -1;
  for (int peer = 0; peer < size; ++peer) {
    if (counts[peer] == 0) continue;
    size_t end = 0, begin_bytes = 0, end_bytes = 0;
    if (__builtin_add_overflow(offsets[peer], counts[peer], &end) ||
        __builtin_mul_overflow(offsets[peer], element, &begin_bytes) ||
        __builtin_mul_overflow(end, element, &end_bytes)) {
      invalid(api, [&] {
        return concat("the ", which, " block of peer ", peer, " (offset ", offsets[peer], ", count ", counts[peer],
                      ") overflows the address space; pass the real offsets and counts, in elements");
      });
    }
    if (first_used < 0) first_used = peer;
    low = std::min(low, begin_bytes);
    high = std::max(high, end_bytes);
    if (blocks != nullptr) blocks->push_back({Extent{begin_bytes, end_bytes}, peer});
  }
  if (first_used < 0) return Extent{};
  if (p == nullptr) {
    invalid(api, [&] {
      return concat("the ", which, " buffer is NULL but peer ", first_used, "'s count is ", counts[first_used],
                    "; pass a buffer of at least ", high, " bytes, or counts of 0");
    });
  }
  Extent range{reinterpret_cast<uintptr_t>(p), 0};
  if (__builtin_add_overflow(range.begin, high, &range.end)) {
    invalid(api, [&] {
      return concat("the ", which, " buffer at ", p, " with blocks up to ", high,
                    " bytes would run past the end of the address space; pass the buffer's real address");
    });
  }
  range.begin += low;
  return range;
}

// all_to_allv: four arrays of one entry per rank, every block inside the address
// space, the receive blocks disjoint (two peers would write one place), and nothing
// received where something is sent (it has no in-place form).
void validate_per_peer(const Call& call, int rank, int size, const char* api) {
  const PerPeer& per_peer = call.per_peer;
  if (per_peer.send_counts == nullptr || per_peer.recv_counts == nullptr) {
    invalid(api, [&] {
      return concat(per_peer.send_counts == nullptr ? "send_counts" : "recv_counts",
                    " is NULL; pass an array of one count per rank (", size, " entries)");
    });
  }
  if (per_peer.send_offsets == nullptr || per_peer.recv_offsets == nullptr) {
    invalid(api, [] { return std::string("the offsets were not filled in; please report it"); });
  }
  if (per_peer.send_counts[rank] != per_peer.recv_counts[rank]) {
    invalid(api, [&] {
      return concat("this rank (", rank, ") sends itself ", per_peer.send_counts[rank], " elements (send_counts[", rank,
                    "]) but expects ", per_peer.recv_counts[rank], " (recv_counts[", rank, "]); make them equal");
    });
  }
  const size_t element = dtype_size(static_cast<Dtype>(call.dtype));
  Extent send =
      blocks_extent(api, "send", call.send, per_peer.send_counts, per_peer.send_offsets, size, element, nullptr);
  std::vector<std::pair<Extent, int>> blocks;
  Extent recv =
      blocks_extent(api, "receive", call.recv, per_peer.recv_counts, per_peer.recv_offsets, size, element, &blocks);
  std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  for (size_t i = 1; i < blocks.size(); ++i) {
    // Named references, not structured bindings: clang 14 does not let the lambda
    // below capture those.
    const Extent& before = blocks[i - 1].first;
    const Extent& block = blocks[i].first;
    const int before_peer = blocks[i - 1].second;
    const int peer = blocks[i].second;
    if (before.overlaps(block)) {
      invalid(api, [&] {
        return concat("the receive blocks of peers ", std::min(peer, before_peer), " and ", std::max(peer, before_peer),
                      " overlap (bytes ", before.begin, "..", before.end, " and ", block.begin, "..", block.end,
                      " of the buffer); give each peer a place of its own in recv_offsets");
      });
    }
  }
  if (send.overlaps(recv)) {
    invalid(api, [&] {
      return concat("the send blocks (", send.end - send.begin, " bytes at ", reinterpret_cast<void*>(send.begin),
                    ") and the receive blocks (", recv.end - recv.begin, " bytes at ",
                    reinterpret_cast<void*>(recv.begin),
                    ") overlap; all_to_allv has no in-place form, use separate "
                    "buffers");
    });
  }
}

}  // namespace

bool is_in_place(const Call& call, int rank, int size) {
  (void)size;
  if (call.send == nullptr || call.recv == nullptr) return false;
  size_t block = call.count * dtype_size(static_cast<Dtype>(call.dtype));
  auto send = reinterpret_cast<uintptr_t>(call.send);
  auto recv = reinterpret_cast<uintptr_t>(call.recv);
  switch (call.kind) {
    case Kind::kAllReduce:
    case Kind::kAllToAll: return send == recv;
    case Kind::kReduce:
    case Kind::kBroadcast: return rank == call.root && send == recv;
    case Kind::kAllGather: return send == recv + static_cast<uintptr_t>(rank) * block;
    case Kind::kGather: return rank == call.root && send == recv + static_cast<uintptr_t>(rank) * block;
    case Kind::kReduceScatter: return recv == send + static_cast<uintptr_t>(rank) * block;
    case Kind::kScatter: return rank == call.root && recv == send + static_cast<uintptr_t>(rank) * block;
    default: return false;
  }
}

void validate(const Call& call, int rank, int size, const char* api) {
  if (call.kind != Kind::kBarrier && !valid_dtype(call.dtype)) {
    invalid(api, [&] {
      return concat("dtype ", call.dtype,
                    " is not a tutti_dtype; use one of TUTTI_DTYPE_INT8 ... TUTTI_DTYPE_FLOAT8_E5M2");
    });
  }
  if (is_reducing(call.kind) && !valid_reduce_op(call.op)) {
    invalid(api,
            [&] { return concat("op ", call.op, " is not a tutti_op; use TUTTI_OP_SUM, _PROD, _MIN, _MAX or _AVG"); });
  }
  if (has_root(call.kind) && (call.root < 0 || call.root >= size)) {
    invalid(api,
            [&] { return concat("root ", call.root, " is out of range: the communicator has ranks 0..", size - 1); });
  }
  if (is_point_to_point(call.kind)) {
    if (call.root < 0 || call.root >= size) {
      invalid(api,
              [&] { return concat("peer ", call.root, " is out of range: the communicator has ranks 0..", size - 1); });
    }
    if (call.tag < 0) invalid(api, [&] { return concat("tag ", call.tag, " is negative; use a tag >= 0"); });
  }
  if (call.kind == Kind::kBarrier) return;
  if (call.kind == Kind::kAllToAllV) return validate_per_peer(call, rank, size, api);

  size_t element = dtype_size(static_cast<Dtype>(call.dtype));
  bool per_rank = call.kind == Kind::kAllGather || call.kind == Kind::kReduceScatter || call.kind == Kind::kGather ||
                  call.kind == Kind::kScatter || call.kind == Kind::kAllToAll;
  size_t multiplier = per_rank ? static_cast<size_t>(size) : 1;
  // Overflow builtins rather than SIZE_MAX / element / multiplier: two divisions are
  // tens of cycles, a visible share of a small message's latency.
  size_t block = 0, whole = 0;
  if (__builtin_mul_overflow(call.count, element, &block) || __builtin_mul_overflow(block, multiplier, &whole)) {
    invalid(api, [&] {
      return concat("count ", call.count, " of ", dtype_name(static_cast<Dtype>(call.dtype)),
                    " overflows the address space; pass a smaller count");
    });
  }
  bool root = rank == call.root;
  // Which buffers this rank reads and writes, and how many bytes of each.
  size_t send_bytes = 0, recv_bytes = 0;
  switch (call.kind) {
    case Kind::kAllReduce: send_bytes = recv_bytes = block; break;
    case Kind::kReduce:
      send_bytes = block;
      recv_bytes = root ? block : 0;
      break;
    case Kind::kBroadcast:
      send_bytes = root ? block : 0;
      recv_bytes = block;
      break;
    case Kind::kAllGather:
      send_bytes = block;
      recv_bytes = whole;
      break;
    case Kind::kReduceScatter:
      send_bytes = whole;
      recv_bytes = block;
      break;
    case Kind::kGather:
      send_bytes = block;
      recv_bytes = root ? whole : 0;
      break;
    case Kind::kScatter:
      send_bytes = root ? whole : 0;
      recv_bytes = block;
      break;
    case Kind::kAllToAll: send_bytes = recv_bytes = whole; break;
    case Kind::kSend: send_bytes = block; break;
    case Kind::kRecv: recv_bytes = block; break;
    case Kind::kBarrier:
    case Kind::kAllToAllV: break;
  }
  if (send_bytes > 0 && call.send == nullptr) {
    invalid(api, [&] {
      return concat("the send buffer is NULL but count is ", call.count, "; pass a buffer of ", send_bytes,
                    " bytes, or count 0");
    });
  }
  if (recv_bytes > 0 && call.recv == nullptr) {
    invalid(api, [&] {
      return concat("the receive buffer is NULL but count is ", call.count, "; pass a buffer of ", recv_bytes,
                    " bytes, or count 0");
    });
  }
  Extent send = extent(api, call, "send", call.send, send_bytes);
  Extent recv = extent(api, call, "receive", call.recv, recv_bytes);
  if (send.overlaps(recv) && !is_in_place(call, rank, size)) {
    invalid(api, [&] {
      return concat("the send and receive buffers overlap but are not the in-place form of ", kind_name(call.kind),
                    " (see tutti.h, \"In place\"); use separate buffers");
    });
  }
}

}  // namespace tutti
