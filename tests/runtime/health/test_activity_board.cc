// The activity board (runtime/health/activity_board.h): the encoded activity the
// heartbeats carry, what describe() says of it, how the running thread's calls show in
// current(), and absent_from() against a real store on loopback: which ranks had not
// joined an operation and where each was instead, which joined it and failed, and an
// answer when the store cannot be read.
#include <time.h>

#include <string>

#include "runtime/common/deadline.h"
#include "runtime/health/activity_board.h"
#include "runtime/store/loss_event.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::soon;
using tutti::Status;
using tutti::health::Activity;
using tutti::health::ActivityBoard;
using tutti::health::decode_activity;
using tutti::health::describe;
using tutti::health::OpFacts;
using tutti::store::activity_key;

namespace {

int64_t wall_ms() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

Activity activity(uint32_t seq, bool running, const char* name, Status status = Status::kOk, const char* waiting = "") {
  Activity a;
  a.seq = seq;
  a.running = running;
  a.name = name;
  a.status = status;
  a.since_ms = wall_ms();
  a.waiting = waiting;
  return a;
}

OpFacts facts(const char* name) {
  OpFacts f;
  f.name = name;
  f.dtype = "float32";
  f.op = "sum";
  f.count = 4;
  return f;
}

// The seconds written after `marker` in text, or -1.
double seconds_after(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  double value = -1;
  if (at == std::string::npos || sscanf(text.c_str() + at + marker.size(), "%lf s", &value) != 1) return -1;
  return value;
}

}  // namespace

Test(activity_board, encode_and_decode_round_trip) {
  Activity a = activity(42, true, "all_reduce", Status::kMismatch, "recv/0/99");
  a.since_ms = 1700000000123;
  std::string text = encode(a);
  cr_expect_eq(text, "42 1 1700000000123 all_reduce recv/0/99 " + std::to_string(static_cast<int>(Status::kMismatch)));
  auto back = decode_activity(text);
  cr_assert(back.has_value(), "%s", text.c_str());
  cr_expect_eq(back->seq, 42u);
  cr_expect(back->running);
  cr_expect_eq(back->since_ms, 1700000000123);
  cr_expect_eq(back->name, "all_reduce");
  cr_expect_eq(back->waiting, "recv/0/99");
  cr_expect(back->status == Status::kMismatch);

  // Nothing yet: the empty strings travel as "-", and no wait comes back as none.
  Activity none;
  cr_expect_eq(encode(none), "0 0 0 - - 0");
  auto empty = decode_activity(encode(none));
  cr_assert(empty.has_value());
  cr_expect(empty->seq == 0 && !empty->running && empty->waiting.empty() && empty->status == Status::kOk);
}

Test(activity_board, decode_refuses_what_is_not_an_activity) {
  for (const char* text : {"", "7 1 1700000000000 all_reduce", "x 1 2 all_reduce - 0", "1 1 2 all_reduce -"}) {
    cr_expect_not(decode_activity(text).has_value(), "\"%s\" was decoded", text);
  }
}

// The forms the header promises, one per state.
Test(activity_board, describe_says_where_a_rank_is) {
  cr_expect_eq(describe(activity(42, true, "all_reduce")), "in all_reduce #42");
  cr_expect_eq(describe(activity(42, false, "all_reduce")), "idle after all_reduce #42");
  cr_expect_eq(describe(activity(42, false, "all_reduce", Status::kMismatch)),
               "idle after all_reduce #42, which failed (MISMATCH)");
  cr_expect_eq(describe(activity(0, false, "-")), "idle, before any collective");
  cr_expect_eq(describe(activity(41, false, "all_reduce", Status::kOk, "recv/0/99")),
               "in recv from rank 0 (tag 99), after all_reduce #41");
  cr_expect_eq(describe(activity(0, false, "-", Status::kOk, "send/3/7")),
               "in send to rank 3 (tag 7), before any collective");
}

// What the running thread does shows in current() at once, with the time of the last
// change on the wall clock (which other ranks compare with theirs).
Test(activity_board, current_follows_the_running_thread, .timeout = 30) {
  store_test::Store store;
  ActivityBoard board(*store.client, "w/", 0, 2);
  auto now = decode_activity(board.current());
  cr_assert(now.has_value(), "%s", board.current().c_str());
  cr_expect_eq(describe(*now), "idle, before any collective");
  cr_expect(now->since_ms > wall_ms() - 5000 && now->since_ms <= wall_ms() + 1000, "since %lld, now %lld",
            static_cast<long long>(now->since_ms), static_cast<long long>(wall_ms()));

  board.started_now(3, facts("all_reduce"), tutti::coarse_now_ms());
  now = decode_activity(board.current());
  cr_expect_eq(describe(*now), "in all_reduce #3");
  board.waiting("recv", 2, 5);
  now = decode_activity(board.current());
  cr_expect_eq(now->waiting, "recv/2/5");
  cr_expect_eq(describe(*now), "in recv from rank 2 (tag 5), after all_reduce #3");
  board.done_waiting();
  board.finished(Status::kTimeout);
  now = decode_activity(board.current());
  cr_expect(now->waiting.empty());
  cr_expect_eq(describe(*now), "idle after all_reduce #3, which failed (TIMEOUT)");

  // Issued is not yet started: the rank is still where it was.
  board.issued(4, facts("broadcast"), tutti::coarse_now_ms());
  cr_expect_eq(describe(*decode_activity(board.current())), "idle after all_reduce #3, which failed (TIMEOUT)");
  board.started(4, "broadcast", tutti::coarse_now_ms());
  cr_expect_eq(describe(*decode_activity(board.current())), "in broadcast #4");

  std::string recent = board.recent_operations();
  cr_expect(contains(recent, "  #3 all_reduce float32 x 4 sum: failed (TIMEOUT) after "), "%s", recent.c_str());
  cr_expect(contains(recent, "  #4 broadcast float32 x 4 sum: running for "), "%s", recent.c_str());
  cr_expect_lt(recent.find("#3"), recent.find("#4"), "%s", recent.c_str());
}

// Rank 0 of 4 times out in operation #5: rank 1 reached it, rank 2 was last seen idle
// after #4, rank 3 never reported. absent_from also publishes rank 0's own state.
Test(activity_board, absent_from_names_the_ranks_behind_and_where_they_were, .timeout = 30) {
  store_test::Store store;
  ActivityBoard board(*store.client, "w/", 0, 4);
  board.started_now(5, facts("all_reduce"), tutti::coarse_now_ms());
  store.client->set(activity_key("w/", 1), encode(activity(5, true, "all_reduce")), soon());
  Activity behind = activity(4, false, "broadcast");
  behind.since_ms = wall_ms() - 3000;
  store.client->set(activity_key("w/", 2), encode(behind), soon());

  std::string failed;
  std::string report = board.absent_from(5, soon(), &failed);
  cr_expect(failed.empty(), "%s", failed.c_str());
  cr_expect_eq(report.rfind("2 (last seen idle after broadcast #4, for ", 0), 0u, "%s", report.c_str());
  double seconds = seconds_after(report, "broadcast #4, for ");
  cr_expect(seconds >= 3.0 && seconds < 8.0, "last seen %.1f s ago, 3 s expected: %s", seconds, report.c_str());
  cr_expect(contains(report, " s), 3 (no report: it has not reached this communicator's collectives, or is gone)"),
            "%s", report.c_str());
  cr_expect_not(contains(report, "1 ("), "rank 1 had joined: %s", report.c_str());
  cr_expect_not(contains(report, "0 ("), "rank 0 is the one asking: %s", report.c_str());

  auto published = decode_activity(store.client->get(activity_key("w/", 0), soon()));
  cr_assert(published.has_value());
  cr_expect_eq(describe(*published), "in all_reduce #5");
}

// Ranks that joined the operation and failed it are named apart, with their status;
// ranks already past it are neither absent nor failed.
Test(activity_board, absent_from_names_the_ranks_that_failed_the_operation, .timeout = 30) {
  store_test::Store store;
  ActivityBoard board(*store.client, "w/", 3, 4);
  board.started_now(5, facts("all_reduce"), tutti::coarse_now_ms());
  store.client->set(activity_key("w/", 0), encode(activity(5, false, "all_reduce", Status::kMismatch)), soon());
  store.client->set(activity_key("w/", 1), encode(activity(6, true, "barrier")), soon());
  store.client->set(activity_key("w/", 2), encode(activity(5, false, "all_reduce", Status::kTimeout)), soon());

  std::string failed;
  std::string report = board.absent_from(5, soon(), &failed);
  cr_expect(report.empty(), "every rank reported joining: %s", report.c_str());
  cr_expect_eq(failed, "0 (MISMATCH), 2 (TIMEOUT)");
}

// A store that cannot be read makes an answer that says so, not an exception.
Test(activity_board, absent_from_an_unreadable_store_says_so, .timeout = 30) {
  store_test::Store store;
  ActivityBoard board(*store.client, "w/", 0, 2);
  store.client->shutdown(Status::kAborted, "the test closed it");
  std::string failed;
  std::string report = board.absent_from(1, soon(), &failed);
  cr_expect_eq(report.rfind("unknown (the store could not be read: ", 0), 0u, "%s", report.c_str());
  cr_expect(contains(report, "the test closed it"), "%s", report.c_str());
  cr_expect(failed.empty());
}
