#include "runtime/transport/shm/group.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "runtime/common/concat.h"
#include "runtime/common/cpus.h"
#include "runtime/common/error.h"
#include "runtime/transport/shm/segment_group.h"

namespace tutti::transport::shm {
namespace {

// How long a waiter spins, then yields, before it sleeps (signal.h). Measured with
// all_reduce on this project's 2-core VM, where a futex sleep and wake-up takes 50 to
// over 100 us:
//   - A rank with a core of its own spins 50 us, which covers a pipeline step, then
//     yields up to 1 ms, so that a peer late by less than that costs no wake-up.
//   - With more ranks than cores, the rank waited for usually needs this very core:
//     spin only a round of 4 pauses (signal.cc), then yield up to 200 us. At 4 ranks
//     on the 2 cores, sleeping at once made an 8-byte all_reduce take 130 us and a
//     1 MiB one 1 ms;
//     yielding first brought them to 7-10 us and 250-280 us (Open MPI: 12 and 480).
//     Yielding longer changed nothing measurable.
constexpr WaitPolicy kOwnCore{50'000, 1'000'000, 64};
constexpr WaitPolicy kSharedCore{0, 200'000, 4};

// How many CPUs this process may run on (1 if that cannot be read). Ranks that each
// are pinned to one core of their own count as sharing cores here, which costs them a
// little latency (they yield where they could spin); the opposite mistake, spinning
// on a core the awaited rank needs, would cost far more.
int usable_cpus() { return std::max(1, static_cast<int>(allowed_cpus().size())); }

// A group's segment is mapped whole at init up to this size (a 2-rank group's, 8.03
// MiB), larger ones as the collectives use them: most of a larger group's segment
// (slots for large messages, per-rank cells) is never used by a job of small calls,
// and reading a byte of every page costs each rank a page-table entry per page, in a
// VM far more than on bare metal: 1.4-1.8 us a page on this project's VMs with one
// process at it, and about 9 us of CPU a page with 64 ranks mapping the same segment
// at once on a PVM guest (2026-11-28), where `tutti launch -n 64` of tutti-init-bench
// took 5.25 s and 115 ms of init CPU a rank (touch_every_page 63% of the job's time
// under perf), and 1.83 s and 18 ms mapped as used. The bound used to be 64 MiB in
// groups of up to 256 ranks: 14 MiB at 4 ranks, 26 MiB at 8, about 48 MiB from 16 to
// 1,500 ranks. At 512 ranks mapping 145 MiB each had been half of each rank's init CPU
// on the earlier VM (30-35 ms a rank and 13-15 s for the job, against 16-18 ms and
// 8.6-9.5 s mapped as used).
constexpr size_t kMapGroupAtOnceBytes = size_t{9} << 20;

}  // namespace

std::unique_ptr<Group> Group::create(store::Client& store, const std::string& prefix, int rank, int size,
                                     Deadline deadline, size_t slot_bytes) {
  if (size < 1 || rank < 0 || rank >= size) {
    fail(Status::kInvalidArgument, concat("shared-memory group at ", prefix, ": rank ", rank, " of ", size,
                                          " is out of range; pass 0 <= rank < size"));
  }
  Layout layout = Layout::for_size(size, slot_bytes);
  try {
    const Mapping mapping = layout.total_bytes <= kMapGroupAtOnceBytes ? Mapping::kAtOnce : Mapping::kAsUsed;
    Segment segment = Segment::share(store, prefix, rank, size, layout.total_bytes, mapping,
                                     "run the same tutti build on every rank", deadline);
    return std::make_unique<SegmentGroup>(std::move(segment), layout, rank, size);
  } catch (const Error& e) {
    fail(e.status(), concat("shared-memory group at ", prefix, " (rank ", rank, " of ", size, "): ", e.what()));
  }
}

SegmentGroup::SegmentGroup(Segment segment, const Layout& layout, int rank, int size)
    : segment_(std::move(segment)),
      layout_(layout),
      rank_(rank),
      size_(size),
      policy_(size > usable_cpus() ? kSharedCore : kOwnCore),
      fenced_(!register_for_membarrier()),
      sources_(static_cast<size_t>(size)) {
  targets_.reserve(static_cast<size_t>(size));
  std::atomic_ref<uint32_t>(control(rank_).posts_fenced).store(fenced_ ? 1 : 0, std::memory_order_relaxed);
}

void SegmentGroup::wait_all(uint64_t step, const OpContext& context, size_t chunk, size_t chunks) {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const uint64_t word = wait_for(control(r), step, policy_, context, WaitLabel{r, chunk, chunks});
    // Past `step` the entry may already hold a later collective's shape: compare only
    // at the step itself.
    if (at_step(word, step) && shape_of(word) != posted_shape_) fail_mismatch(r, context);
  }
  if (step > known_) known_ = step;
}

void SegmentGroup::wait_owner(int owner, uint64_t step, const OpContext& context, size_t chunk, size_t chunks) {
  const uint64_t word = wait_for(control(owner), step, policy_, context, WaitLabel{owner, chunk, chunks});
  if (!at_step(word, step) || shape_of(word) != posted_shape_) fail_mismatch(owner, context);
}

void SegmentGroup::fail_mismatch(int rank, const OpContext& context) const {
  fail(Status::kMismatch,
       concat(context.label(), ": rank ", rank,
              " called a different collective, or this one or an earlier broadcast, gather or scatter with a "
              "different count, dtype, op or root",
              regions_made_ > 0 ? ", or called tutti_mem_alloc or tutti_mem_free at another point" : "",
              "; every rank must make the same calls (TUTTI_CHECK=1 names the fields that differ)"));
}

// Waits for each peer's post of `step`, then records the least step the peers have
// posted, found by reading their next entries while they show later steps: a root that
// runs ahead of its readers then reads their entries once per catch-up, not every call.
void SegmentGroup::wait_released_slow(uint64_t step, const OpContext& context) {
  uint64_t least = UINT64_MAX;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const Control& peer = control(r);
    wait_for(peer, step, policy_, context, WaitLabel{r, 0, 1});
    uint64_t seen = step;
    while (seen + 1 < step + kStepEntries &&
           reached(load_word(entry_of(peer, seen + 1), std::memory_order_acquire), seen + 1)) {
      ++seen;
    }
    least = std::min(least, seen);
  }
  known_ = std::max(known_, least == UINT64_MAX ? step : least);  // UINT64_MAX: no peers
}

void SegmentGroup::fail_unusable(const OpContext& context) const {
  fail(Status::kAborted, concat("the shared-memory group of ", context.where, " is unusable after ", failed_,
                                " failed; destroy the communicator"));
}

void SegmentGroup::barrier(const OpContext& context) {
  run(context, Shape{}, [&] {
    uint64_t step = ++step_;
    post(step, step + 1, context);
    wait_all(step, context, 0, 1);
  });
}

}  // namespace tutti::transport::shm
