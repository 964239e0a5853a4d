#include "runtime/transport/shm/group.h"

#include <sched.h>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/transport/shm/segment_group.h"

namespace tutti::transport::shm {
namespace {

// How long a waiter spins before yielding, and how often it yields before it sleeps.
// With a core per rank, a peer's post is usually microseconds away and a futex wake
// costs more than that, so spin up to 50 us. With more ranks than cores the rank
// waited for may need this very core: spin only 2 us, and yield twice.
constexpr WaitPolicy kOwnCore{50'000, 4};
constexpr WaitPolicy kSharedCore{2'000, 2};

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return CPU_COUNT(&set);
}

}  // namespace

std::unique_ptr<Group> Group::create(store::Client& store, const std::string& prefix, int rank, int size,
                                     Deadline deadline) {
  if (size < 1 || rank < 0 || rank >= size) {
    fail(Status::kInvalidArgument, concat("shared-memory group at ", prefix, ": rank ", rank, " of ", size,
                                          " is out of range; pass 0 <= rank < size"));
  }
  Layout layout = Layout::for_size(size);
  Segment segment = Segment::share(store, prefix, rank, size, layout.total_bytes, deadline);
  return std::make_unique<SegmentGroup>(std::move(segment), layout, rank, size);
}

SegmentGroup::SegmentGroup(Segment segment, const Layout& layout, int rank, int size)
    : segment_(std::move(segment)),
      layout_(layout),
      rank_(rank),
      size_(size),
      policy_(size > usable_cpus() ? kSharedCore : kOwnCore),
      sources_(static_cast<size_t>(size)) {}

void SegmentGroup::wait_all(uint64_t step, const OpContext& context, size_t chunk, size_t chunks) {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) wait_for(control(r), step, policy_, context, WaitLabel{r, chunk, chunks});
  }
}

void SegmentGroup::fail_unusable(const OpContext& context) const {
  fail(Status::kAborted, concat("the shared-memory group of ", context.where, " is unusable after ", failed_,
                                " failed; destroy the communicator"));
}

void SegmentGroup::barrier(const OpContext& context) {
  run(context, [&] {
    uint64_t step = ++step_;
    post(step);
    wait_all(step, context, 0, 1);
  });
}

}  // namespace tutti::transport::shm
