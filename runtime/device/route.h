// Which path serves a communicator's device buffers: NCCL, or the staging path (copy
// to pinned host memory, run the host collective, copy back). Pure decisions over
// facts the ranks exchange through the store, so that every rank decides the same
// and the logic is tested without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/operation/call.h"

namespace tutti::device {

// What one rank found: its GPU and the NCCL it could load.
struct RankGpu {
  std::string uuid;            // the device's UUID in hex ("" if unknown)
  int nccl_version = 0;        // ncclGetVersion's code (e.g. 22809), 0 if NCCL could not be loaded
  int compute_capability = 0;  // major * 10 + minor (90: Hopper), 0 if unknown
};
// "<nccl_version> <uuid> <compute_capability>", as the store carries it.
std::string encode(const RankGpu& gpu);
std::optional<RankGpu> decode_rank_gpu(const std::string& text);

struct Route {
  bool nccl = false;
  int nccl_version = 0;        // the lowest among the ranks (0 on the staging path)
  int compute_capability = 0;  // the lowest among the ranks' GPUs (0 if one is unknown)
  std::string why_staged;      // for the log line; "" when nccl
};

// NCCL serves the communicator only if every rank loaded it and no two ranks share a
// GPU (NCCL refuses one GPU twice in a communicator). why_not_loaded: this rank's
// reason when its NCCL could not be loaded, for the message.
Route choose_route(const std::vector<RankGpu>& ranks, const std::string& why_not_loaded);

// "ranks 0, 2 share GPU <uuid>; ranks 1, 3 share GPU <uuid>", or "" if none do.
std::string shared_gpus(const std::vector<RankGpu>& ranks);

// Why the route's NCCL cannot run call as tutti defines it (nullptr when it can): a
// bfloat16 or an AVG before NCCL 2.10; an fp8 reduction before NCCL 2.24, or on a GPU
// before compute capability 9.0 (NCCL builds its fp8 reductions for Hopper and later
// only, and refuses them elsewhere); an integer
// AVG (tutti truncates the sum's quotient on the host, and keeps every path rounding
// alike) or an fp8 AVG (NCCL scales each input first); a send or receive
// (NCCL's have no tags); an all_to_all in place; a barrier (no buffers, so it never
// reaches the device path).
const char* nccl_lacks(const Call& call, const Route& route);

}  // namespace tutti::device
