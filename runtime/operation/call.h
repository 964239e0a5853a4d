// One collective or point-to-point call as the user made it, before validation: the
// dtype and op are still the raw integers from the C API, so that an unknown value is
// reported rather than cast.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/operation/dtype.h"

namespace tutti {

enum class Kind : uint8_t {
  kAllReduce,
  kReduce,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kGather,
  kScatter,
  kAllToAll,
  kBarrier,
  kSend,
  kRecv,
  kAllToAllV,
};
constexpr int kKindCount = 12;

// "all_reduce": the call's name without tutti_, as messages and TUTTI_ALGO spell it.
// Inline, with the predicates below, since every call asks them several times.
inline const char* kind_name(Kind kind) {
  static constexpr const char* kNames[kKindCount] = {"all_reduce",     "reduce", "broadcast", "all_gather",
                                                     "reduce_scatter", "gather", "scatter",   "all_to_all",
                                                     "barrier",        "send",   "recv",      "all_to_allv"};
  return kNames[static_cast<int>(kind)];
}

// all_to_allv's blocks, in elements: to peer j go send_counts[j] elements from
// send + send_offsets[j], and from peer j come recv_counts[j] into recv +
// recv_offsets[j]. Each array has one entry per rank; the offsets are filled in
// (tutti.h lets them be NULL: blocks packed in rank order) before the call is issued.
struct PerPeer {
  const size_t* send_counts = nullptr;
  const size_t* send_offsets = nullptr;
  const size_t* recv_counts = nullptr;
  const size_t* recv_offsets = nullptr;
};

struct Call {
  Kind kind = Kind::kBarrier;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int32_t dtype = static_cast<int32_t>(Dtype::kUint8);
  int32_t op = static_cast<int32_t>(ReduceOp::kSum);
  int32_t root = 0;  // the peer of a send or recv
  int32_t tag = 0;   // send and recv only
  PerPeer per_peer;  // all_to_allv only; count is then the elements this rank sends
};

inline bool is_reducing(Kind kind) {
  return kind == Kind::kAllReduce || kind == Kind::kReduce || kind == Kind::kReduceScatter;
}
inline bool has_root(Kind kind) {
  return kind == Kind::kReduce || kind == Kind::kBroadcast || kind == Kind::kGather || kind == Kind::kScatter;
}
inline bool is_point_to_point(Kind kind) { return kind == Kind::kSend || kind == Kind::kRecv; }

// Throws Error(kInvalidArgument) naming the argument and how to fix it: a NULL buffer
// that this rank needs for a nonzero count, an unknown dtype or op, a root or peer
// outside [0, size), a negative tag, overlapping buffers other than the in-place form
// tutti.h allows, a size that overflows, a buffer whose end would lie past the top of
// the address space. `api` is "tutti_all_reduce" etc.
void validate(const Call& call, int rank, int size, const char* api);

// Where the call's buffers overlap in the allowed in-place form.
bool is_in_place(const Call& call, int rank, int size);

}  // namespace tutti
