// The GPU watchdog's decisions (runtime/device/watchdog.cc), driven by the real event
// loop against a stand-in for NCCL: fences the test passes by hand, an asynchronous
// error it sets, and a count of aborts. The NCCL-backed Watched is tested on a GPU
// (tests/gpu).
#include <criterion/criterion.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/device/watchdog.h"

using tutti::Deadline;
using tutti::Fault;
using tutti::Status;
using tutti::device::Watch;
using tutti::device::Watchdog;
using tutti::device::WatchdogSetup;
using tutti::work::Work;

namespace {

// The GPU passes it when the test says so.
class HandFence : public tutti::work::Fence {
 public:
  bool reached() override { return passed.load(); }
  void make_stream_wait(void*) override {}
  std::atomic<bool> passed{false};
};

// NCCL as the watchdog sees it.
class FakeNccl : public tutti::device::Watched {
 public:
  std::string async_error() override {
    std::lock_guard<std::mutex> lock(mutex);
    return error;
  }
  // As ncclCommAbort, which waits for whatever holds the stream ahead of NCCL's
  // kernels, it returns only once `held` is false (bounded, for the test's sake).
  void abort() override {
    ++aborts;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (held.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ++aborts_returned;
  }
  void set_error(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    error = text;
  }
  // Whether abort() has returned within ms; the watchdog calls it after failing the
  // operations, so a test that saw them fail waits for it here.
  bool aborted_within(int ms) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (aborts_returned.load() == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return aborts_returned.load() == 1 && aborts.load() == 1;
  }
  std::mutex mutex;
  std::string error;
  std::atomic<bool> held{false};
  std::atomic<int> aborts{0};
  std::atomic<int> aborts_returned{0};
};

struct Rig {
  std::shared_ptr<tutti::loop::Loop> loop = tutti::loop::Loop::create();
  Fault fault;
  FakeNccl nccl;
  std::atomic<uint32_t> reported_seq{0};
  std::unique_ptr<Watchdog> watchdog;

  Rig() {
    WatchdogSetup setup;
    setup.loop = loop;
    setup.fault = &fault;
    setup.desync_report = [this](uint32_t seq) {
      reported_seq = seq;
      return std::string("Ranks that had not joined it: 1 (last seen in broadcast #6 for 2.0 s)");
    };
    watchdog = std::make_unique<Watchdog>(std::move(setup), nccl);
  }

  // One operation of seq, due in timeout_ms. Its Work has no fence of its own, so that
  // only the watchdog can complete it.
  std::shared_ptr<Work> watch(const std::shared_ptr<HandFence>& fence, uint32_t seq, int64_t timeout_ms) {
    auto work = std::make_shared<Work>();
    Watch entry;
    entry.fence = fence;
    entry.work = work;
    entry.deadline = Deadline::after_ms(timeout_ms);
    entry.timeout_ms = timeout_ms;
    entry.seq = seq;
    entry.label = "all_reduce #" + std::to_string(seq) + " on comm \"world\" (rank 0 of 2)";
    watchdog->watch(std::move(entry));
    return work;
  }
};

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

Test(watchdog, operations_complete_as_the_gpu_passes_their_fences_in_any_order, .timeout = 20) {
  Rig rig;
  auto first = std::make_shared<HandFence>();
  auto second = std::make_shared<HandFence>();
  auto a = rig.watch(first, 1, 60000);
  auto b = rig.watch(second, 2, 60000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cr_assert(!a->done() && !b->done());
  second->passed = true;
  cr_assert(b->wait_for(5000));
  cr_assert(!a->done());
  first->passed = true;
  cr_assert(a->wait_for(5000));
  cr_assert_eq(a->status(), Status::kOk);
  cr_assert_eq(b->status(), Status::kOk);
  cr_assert(rig.watchdog->drain(Deadline::after_ms(5000)));
  cr_assert_eq(rig.nccl.aborts.load(), 0);
  cr_assert(!rig.watchdog->broken());
}

Test(watchdog, an_operation_past_its_deadline_aborts_nccl_and_fails_every_pending_one, .timeout = 20) {
  Rig rig;
  auto late = rig.watch(std::make_shared<HandFence>(), 7, 100);
  auto behind = rig.watch(std::make_shared<HandFence>(), 8, 60000);
  auto started = std::chrono::steady_clock::now();
  cr_assert(late->wait_for(10000));
  cr_assert(behind->wait_for(10000));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  cr_assert_lt(took.count(), 5000, "the timeout took %lld ms to act on", static_cast<long long>(took.count()));
  cr_assert_eq(late->status(), Status::kTimeout);
  cr_assert_eq(behind->status(), Status::kTimeout);
  cr_assert(contains(late->message(), "all_reduce #7"), "%s", late->message().c_str());
  cr_assert(contains(late->message(), "timed out after 100 ms on the GPU"), "%s", late->message().c_str());
  cr_assert(contains(late->message(), "Ranks that had not joined it: 1"), "%s", late->message().c_str());
  cr_assert(contains(late->message(), "aborted"), "%s", late->message().c_str());
  cr_assert(contains(behind->message(), "all_reduce #8 on comm \"world\" (rank 0 of 2) stopped: all_reduce #7"), "%s",
            behind->message().c_str());
  cr_assert_eq(rig.reported_seq.load(), 7u);
  cr_assert(rig.nccl.aborted_within(5000));
  cr_assert(rig.watchdog->broken());
  // Later calls are refused with the incident's status and story.
  try {
    rig.watch(std::make_shared<HandFence>(), 9, 60000);
    cr_assert_fail("watch() after an incident must throw");
  } catch (const tutti::Error& error) {
    cr_assert_eq(error.status(), Status::kTimeout);
    cr_assert(contains(error.what(), "unusable"), "%s", error.what());
  }
}

Test(watchdog, an_abort_that_waits_for_the_stream_does_not_hold_up_the_failure, .timeout = 20) {
  // A host function ahead of NCCL's kernel holds the stream, and ncclCommAbort waits
  // for it: the operation still fails at its deadline, and the abort finishes once
  // the stream moves.
  Rig rig;
  rig.nccl.held = true;
  auto work = rig.watch(std::make_shared<HandFence>(), 2, 100);
  auto started = std::chrono::steady_clock::now();
  cr_assert(work->wait_for(5000));
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  cr_assert_lt(took.count(), 5000, "the failure waited %lld ms for the abort", static_cast<long long>(took.count()));
  cr_assert_eq(work->status(), Status::kTimeout);
  cr_assert(contains(work->message(), "ncclCommAbort"), "%s", work->message().c_str());
  cr_assert(!rig.nccl.aborted_within(50), "abort() returned while the stream was held");
  rig.nccl.held = false;
  cr_assert(rig.nccl.aborted_within(5000));
}

Test(watchdog, an_aborted_fence_never_counts_as_reached, .timeout = 20) {
  // ncclCommAbort lets the events behind the aborted kernels pass: they must not read
  // as success. The broken flag, which fences check, is set before the abort.
  Rig rig;
  auto flag = rig.watchdog->broken_flag();
  cr_assert(!flag->load());
  auto work = rig.watch(std::make_shared<HandFence>(), 3, 50);
  cr_assert(work->wait_for(10000));
  cr_assert(flag->load());
  cr_assert_eq(work->status(), Status::kTimeout);
}

Test(watchdog, an_asynchronous_nccl_error_aborts_and_fails_with_transport, .timeout = 20) {
  Rig rig;
  auto work = rig.watch(std::make_shared<HandFence>(), 4, 60000);
  rig.nccl.set_error("ncclAllReduce: remote process exited or there was a network error");
  cr_assert(work->wait_for(10000));
  cr_assert_eq(work->status(), Status::kTransport);
  cr_assert(contains(work->message(), "NCCL reported ncclAllReduce: remote process exited"), "%s",
            work->message().c_str());
  cr_assert(rig.nccl.aborted_within(5000));
}

Test(watchdog, a_lost_peer_aborts_and_fails_with_peer_lost, .timeout = 20) {
  Rig rig;
  auto work = rig.watch(std::make_shared<HandFence>(), 5, 60000);
  rig.fault.raise(Status::kPeerLost, "rank 1 (host h, pid 42) was declared lost: its connection closed");
  cr_assert(work->wait_for(10000));
  cr_assert_eq(work->status(), Status::kPeerLost);
  cr_assert(contains(work->message(), "rank 1 (host h, pid 42) was declared lost"), "%s", work->message().c_str());
  cr_assert(rig.nccl.aborted_within(5000));
}

Test(watchdog, nothing_pending_means_nothing_to_abort, .timeout = 20) {
  // A fault with no operation on the GPU aborts nothing: there is no kernel to stop,
  // and the communicator's own checks refuse later calls.
  Rig rig;
  rig.fault.raise(Status::kAborted, "tutti_comm_abort was called");
  rig.nccl.set_error("ignored: nothing pending");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  cr_assert_eq(rig.nccl.aborts.load(), 0);
  cr_assert(!rig.watchdog->broken());
}

Test(watchdog, a_new_watchdog_after_an_incident_works, .timeout = 20) {
  // What a new communicator gets after the old one's NCCL was aborted.
  {
    Rig broken;
    auto work = broken.watch(std::make_shared<HandFence>(), 1, 30);
    cr_assert(work->wait_for(10000));
    cr_assert_eq(work->status(), Status::kTimeout);
  }
  Rig fresh;
  auto fence = std::make_shared<HandFence>();
  auto work = fresh.watch(fence, 1, 60000);
  fence->passed = true;
  cr_assert(work->wait_for(5000));
  cr_assert_eq(work->status(), Status::kOk);
  cr_assert_eq(fresh.nccl.aborts.load(), 0);
}

Test(watchdog, destroying_it_fails_what_is_still_pending, .timeout = 20) {
  auto rig = std::make_unique<Rig>();
  auto work = rig->watch(std::make_shared<HandFence>(), 2, 60000);
  cr_assert(!rig->watchdog->drain(Deadline::after_ms(20)));
  rig->watchdog.reset();
  cr_assert(work->done());
  cr_assert_eq(work->status(), Status::kAborted);
  cr_assert(contains(work->message(), "destroyed"), "%s", work->message().c_str());
}

Test(watchdog, a_waiter_on_a_fenced_work_completes_it_without_the_watchdog, .timeout = 20) {
  // Work::wait_for polls the fence itself, so a small operation's latency is not the
  // watchdog's poll interval.
  auto fence = std::make_shared<HandFence>();
  auto work = std::make_shared<Work>(fence);
  cr_assert(!work->wait_for(10));
  cr_assert(!work->test());
  std::thread gpu([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fence->passed = true;
  });
  cr_assert(work->wait_for(5000));
  gpu.join();
  cr_assert_eq(work->status(), Status::kOk);
  cr_assert(work->test());
}
