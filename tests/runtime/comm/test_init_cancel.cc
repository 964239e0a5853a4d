// An init given up from another thread (runtime/rendezvous/init_cancel.h): what InitCancel
// itself promises (the first reason sticks, a watched store client is shut down
// whether it is watched before or after the cancel, and one no longer watched is
// left alone), then Comm::init cancelled before it starts, while it connects to a
// store nobody serves, and while it waits for a rank that never comes: each ends at
// once with kAborted, not at its init timeout, saying why or what it gave up.
#include <chrono>
#include <future>
#include <thread>

#include "runtime/rendezvous/init_cancel.h"
#include "tests/runtime/comm/comm_ranks.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::error_of;
using store_test::ms_since;
using store_test::soon;
using tutti::Status;
using tutti::rendezvous::InitCancel;

namespace {

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Comm::init with options on another thread, cancelled with `why` after delay_ms;
// returns what init threw ("STATUS message", or "OK") and sets *took_ms to how long
// after the cancel it ended.
std::string init_cancelled_after(const tutti::comm::Options& options, int delay_ms, const std::string& why,
                                 int64_t* took_ms) {
  InitCancel cancel;
  auto init = std::async(std::launch::async,
                         [&] { return comm_ranks::outcome_of([&] { tutti::comm::Comm::init(options, &cancel); }); });
  pause_ms(delay_ms);
  cr_assert(init.wait_for(std::chrono::seconds(0)) != std::future_status::ready, "the init ended before the cancel");
  auto cancelled = store_test::Clock::now();
  cancel.cancel(why);
  cr_assert(init.wait_for(std::chrono::milliseconds(tt_timeout_ms(10000))) == std::future_status::ready,
            "the cancelled init did not end");
  *took_ms = ms_since(cancelled);
  return init.get();
}

}  // namespace

Test(init_cancel, the_first_reason_sticks) {
  InitCancel cancel;
  auto cancelled = cancel.predicate();
  cr_expect_not(cancel.requested());
  cr_expect_not(cancelled());
  cancel.check();  // does not throw yet
  cancel.cancel("tutti_comm_abort was called during the init");
  cancel.cancel("a second reason");
  cr_expect(cancel.requested());
  cr_expect(cancelled());
  tutti::Error error = error_of([&] { cancel.check(); });
  cr_expect(error.status() == Status::kAborted);
  cr_expect_str_eq(error.what(), "tutti_comm_abort was called during the init");
}

// A call blocked on the watched client ends at once, with the reason.
Test(init_cancel, cancel_shuts_the_watched_client_down, .timeout = 30) {
  store_test::Store store;
  InitCancel cancel;
  cancel.watch(store.client.get());
  auto waiting = std::async(std::launch::async, [&] {
    return comm_ranks::outcome_of([&] { store.client->get("never-set", tutti::Deadline::after_ms(60000)); });
  });
  pause_ms(200);
  auto start = store_test::Clock::now();
  cancel.cancel("given up by the test");
  cr_assert(waiting.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  std::string outcome = waiting.get();
  cr_expect_lt(ms_since(start), 2000);
  cr_expect(outcome.rfind("ABORTED ", 0) == 0 && contains(outcome, "given up by the test"), "%s", outcome.c_str());
}

Test(init_cancel, client_watched_after_the_cancel_is_shut_down_at_once, .timeout = 30) {
  store_test::Store store;
  InitCancel cancel;
  cancel.cancel("cancelled before the store was reached");
  cancel.watch(store.client.get());
  tutti::Error error = error_of([&] { store.client->set("k", "v", soon()); });
  cr_expect(error.status() == Status::kAborted, "%s", error.what());
  cr_expect(contains(error.what(), "cancelled before the store was reached"), "%s", error.what());
}

Test(init_cancel, client_no_longer_watched_is_left_alone, .timeout = 30) {
  store_test::Store store;
  InitCancel cancel;
  cancel.watch(store.client.get());
  cancel.watch(nullptr);
  cancel.cancel("too late");
  store.client->set("k", "v", soon());
  cr_expect_eq(store.client->get("k", soon()), "v");
}

Test(init_cancel, init_cancelled_before_it_starts_fails_at_once, .timeout = 30) {
  InitCancel cancel;
  cancel.cancel("destroyed before the init began");
  auto start = store_test::Clock::now();
  tutti::Error error = error_of([&] { tutti::comm::Comm::init(comm_ranks::options(0, 1, tt_free_port()), &cancel); });
  cr_expect(error.status() == Status::kAborted, "%s", error.what());
  cr_expect_str_eq(error.what(), "destroyed before the init began");
  cr_expect_lt(ms_since(start), 2000);
}

// Rank 1 of 2 with no rank 0: the init retries connecting to the store until cancelled.
Test(init_cancel, init_connecting_to_a_store_nobody_serves, .timeout = 30) {
  int64_t took = 0;
  int port = tt_free_port();
  std::string outcome =
      init_cancelled_after(comm_ranks::options(1, 2, port), 300, "tutti_comm_abort during the init", &took);
  cr_expect_eq(outcome, tutti::concat("ABORTED connecting to the rendezvous store at 127.0.0.1:", port,
                                      " was given up (the init was aborted)"));
  cr_expect_lt(took, 2000, "the init ended %lld ms after the cancel (init timeout 20 s)", static_cast<long long>(took));
}

// Rank 0 of 2 serves the store and waits in the meeting for a rank 1 that never comes.
Test(init_cancel, init_waiting_for_a_rank_that_never_comes, .timeout = 30) {
  int64_t took = 0;
  std::string outcome =
      init_cancelled_after(comm_ranks::options(0, 2, tt_free_port()), 500, "tutti_comm_destroy during the init", &took);
  cr_expect(outcome.rfind("ABORTED ", 0) == 0 && contains(outcome, "tutti_comm_destroy during the init"), "%s",
            outcome.c_str());
  cr_expect_lt(took, 2000, "the init ended %lld ms after the cancel (init timeout 20 s)", static_cast<long long>(took));
}
