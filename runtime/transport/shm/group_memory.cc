// Shared memory for the user (tutti_mem_alloc), and how a collective finds its peers'
// buffers in it. Each allocation is a segment of its own that every rank maps whole,
// rank r's part at r * stride: a peer reads a block there with one copy, where a block
// in private memory goes through a slot (copied in, then out), or for all_gather,
// all_to_all and scatter may be read straight from its owner's process (group_peer_reads.cc), which on this
// project's 2-core VM moved 6-9 GB/s at 32 MiB against 28 GB/s for a copy within the
// process.
#include <algorithm>

#include "runtime/common/concat.h"
#include "runtime/transport/shm/segment_group.h"

namespace tutti::transport::shm {
namespace {

// Below this, collectives do not ask where their buffers lie: the extra step costs a
// round trip between the cores, a sizeable part of a small message's time.
constexpr size_t kReadInPlaceFromBytes = size_t{64} << 10;

std::string tebibytes(size_t bytes) { return concat(bytes >> 40, " TiB"); }

// Regions of up to this size, in groups of up to this many ranks, are mapped whole by
// tutti_mem_alloc (each rank pays a page-table entry per page of every rank's part:
// ranks x bytes for the group); larger ones as the collectives use them. The bound a
// group's own segment had until 2026-11-28 (group.cc).
constexpr size_t kMapRegionAtOnceBytes = size_t{64} << 20;
constexpr int kMapRegionAtOnceRanks = 256;

}  // namespace

std::string shared_size_error(size_t bytes, int ranks) {
  if (bytes <= max_shared_part(ranks)) return "";
  std::string shape = ranks > 1
                          ? concat("every rank maps all ", ranks, " ranks' parts, at most ",
                                   tebibytes(kMaxSharedMapping), " in one process, so each rank may ask for at most")
                          : concat("one process maps at most ", tebibytes(kMaxSharedMapping), ", so at most");
  return concat("more than tutti_mem_alloc can map: ", shape, " ", max_shared_part(ranks),
                " bytes; ask for less (the same on every rank)");
}

void* SegmentGroup::allocate_shared(store::Client& store, const std::string& prefix, size_t bytes, Deadline deadline) {
  const uint64_t id = ++regions_made_;
  const std::string key_prefix = concat(prefix, id, "/");
  if (std::string why = shared_size_error(bytes, size_); !why.empty()) {
    // The others may have been given a size that fits: they fail with this one's reason.
    Error refusal(Status::kInvalidArgument, concat("rank ", rank_, " asked for ", bytes, " bytes, ", why));
    Segment::refuse(store, key_prefix, rank_, refusal, deadline);
  }
  const size_t stride = Layout::round_up(std::max<size_t>(bytes, 1), Layout::kPage);
  // The caller's buffers, whose every page its collectives will read: mapped whole now,
  // where the first touches cost least, unless the group would map so much in all that
  // tutti_mem_alloc itself stalls (as a group's segment did, group.cc).
  const size_t region_bytes = stride * size_;
  const Mapping mapping =
      region_bytes <= kMapRegionAtOnceBytes && size_ <= kMapRegionAtOnceRanks ? Mapping::kAtOnce : Mapping::kAsUsed;
  Segment segment = Segment::share(store, key_prefix, rank_, size_, region_bytes, mapping,
                                   "pass the same bytes to tutti_mem_alloc on every rank", deadline);
  regions_.push_back(SharedRegion{id, std::move(segment), stride, bytes});
  ++regions_changes_;
  return regions_.back().part(rank_);
}

bool SegmentGroup::free_shared(void* ptr) {
  auto found = std::find_if(regions_.begin(), regions_.end(),
                            [&](const SharedRegion& region) { return region.part(rank_) == ptr; });
  if (found == regions_.end()) return false;
  regions_.erase(found);
  ++regions_changes_;
  return true;
}

bool SegmentGroup::may_read_in_place(size_t bytes) const { return !regions_.empty() && bytes >= kReadInPlaceFromBytes; }

SegmentGroup::Place SegmentGroup::place_of(const void* buffer, size_t bytes) const {
  const auto* at = static_cast<const unsigned char*>(buffer);
  for (const SharedRegion& region : regions_) {
    const unsigned char* mine = region.part(rank_);
    if (at >= mine && at < mine + region.bytes && bytes <= region.bytes - static_cast<size_t>(at - mine)) {
      return Place{region.id, static_cast<uint64_t>(at - mine)};
    }
  }
  return Place{};
}

unsigned char* SegmentGroup::mapped_at(int owner, Place place, size_t bytes, const OpContext& context) const {
  for (const SharedRegion& region : regions_) {
    if (region.id != place.region) continue;
    if (place.offset > region.bytes || bytes > region.bytes - place.offset) break;
    return region.part(owner) + place.offset;
  }
  fail(Status::kMismatch,
       concat(context.label(), ": rank ", owner, "'s data lies in shared memory from tutti_mem_alloc #", place.region,
              " that this rank has freed or does not hold there; every rank must call tutti_mem_alloc and "
              "tutti_mem_free at the same points of its collective calls"));
}

uint64_t SegmentGroup::announce_places(Places places, const OpContext& context) {
  const uint64_t step = ++step_;
  claim_entry(step, context);
  write_places(step, places);
  post(step, step + 1, context);
  wait_all(step, context, 0, 1);
  return step;
}

void SegmentGroup::wait_done_in_place(const OpContext& context) {
  const uint64_t done = ++step_;
  post(done, done + 1, context);
  wait_all(done, context, 0, 1);
  ++in_place_runs_;
}

}  // namespace tutti::transport::shm
