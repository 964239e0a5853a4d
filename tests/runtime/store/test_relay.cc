// A relay (relay.h) in front of a store, through real connections: ranks on the relay
// see the store's keys as ranks on the store do; the relay watches its ranks and writes
// their losses where the store writes its own; a relay that is lost takes the ranks it
// still carries with it, and one that loses its store closes its ranks' connections.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "runtime/common/wall_clock.h"
#include "runtime/store/loss_event.h"
#include "runtime/store/relay.h"
#include "runtime/store/roster.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::soon;
using tutti::Status;
using tutti::store::decode_loss_event;

namespace {

const char* const kSecret = "relay-test-secret";

// A store, and a relay in front of it on a loop of its own, as a node would have.
struct Relayed {
  explicit Relayed(int64_t relay_timeout_ms = 20000, int64_t relay_interval_ms = 100) : store({}, kSecret) {
    tutti::store::RelaySetup setup;
    setup.store_host = "127.0.0.1";
    setup.store_port = store.server->port();
    setup.secret = kSecret;
    setup.heartbeat_interval_ms = relay_interval_ms;
    setup.heartbeat_timeout_ms = relay_timeout_ms;
    relay = tutti::store::start_relay(relay_loop, setup, soon());
  }
  std::unique_ptr<tutti::store::Client> rank(const std::string& secret = kSecret) {
    return tutti::store::Client::connect(store.client_loop, "127.0.0.1", relay->port(), soon(), secret);
  }

  store_test::Store store;
  std::shared_ptr<tutti::loop::Loop> relay_loop = tutti::loop::Loop::create();
  std::unique_ptr<tutti::store::Server> relay;
};

tutti::store::LossEvent loss(tutti::store::Client& client, const std::string& key) {
  auto event = decode_loss_event(client.get(key, soon()));
  cr_assert(event.has_value(), "%s is not a loss event", key.c_str());
  return *event;
}

}  // namespace

Test(relay, ranks_on_a_relay_share_the_stores_keys, .timeout = 30) {
  Relayed job;
  auto rank = job.rank();
  rank->set("a", "from the relay", soon());
  cr_assert_eq(job.store.client->get("a", soon()), "from the relay");
  job.store.client->set("b", "from the store", soon());
  cr_assert_eq(rank->get("b", soon()), "from the store");
  cr_assert_eq(rank->add("n", 2, soon()), 2);
  cr_assert_eq(job.store.client->add("n", 3, soon()), 5);
  cr_assert_eq(rank->compare_set("c", "", "first", soon()), "first");
  cr_assert_eq(rank->multi_get({"a", "b", "c"}, soon()),
               (std::vector<std::string>{"from the relay", "from the store", "first"}));

  // A waiting GET waits at the store, and is answered through the relay.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    job.store.client->set("late", "now", soon());
  });
  cr_assert_eq(rank->get("late", soon()), "now");
  later.join();
  auto timeout = store_test::error_of([&] { rank->get("never", tutti::Deadline::after_ms(200)); });
  cr_assert_eq(timeout.status(), Status::kTimeout, "%s", timeout.what());
  // The store's limits reach the rank with the store's words.
  auto too_long = store_test::error_of([&] { rank->set(std::string(5000, 'k'), "", soon()); });
  cr_assert_eq(too_long.status(), Status::kInvalidArgument, "%s", too_long.what());
}

Test(relay, a_rank_without_the_secret_is_denied_by_the_relay_and_the_store_hears_of_it, .timeout = 30) {
  Relayed job;
  auto denied = store_test::error_of([&] { job.rank("another secret"); });
  cr_assert_eq(denied.status(), Status::kDenied, "%s", denied.what());
  // Where the ranks waiting in a meeting look for it (server.h kDeniedKey): at the store.
  std::string note = job.store.client->get(tutti::store::kDeniedKey, soon());
  cr_assert(contains(note, "TUTTI_SECRET differs"), "%s", note.c_str());
}

Test(relay, a_rank_the_relay_loses_is_a_loss_event_at_the_store, .timeout = 30) {
  Relayed job;
  auto rank = job.rank();
  rank->member("world.0/", 4, soon());
  rank->heartbeat(5000, "3 1 1700000000000 broadcast", soon());
  cr_assert_eq(job.store.client->get("world.0/activity/4", soon()), "3 1 1700000000000 broadcast");
  rank.reset();  // a killed process

  auto event = loss(*job.store.client, "world.0/lost/1");
  cr_assert_eq(event.rank, 4);
  cr_assert(contains(event.identity, ":" + std::to_string(getpid())), "%s", event.identity.c_str());
  cr_assert(contains(event.reason, "closed"), "%s", event.reason.c_str());
  cr_assert_eq(event.activity, "3 1 1700000000000 broadcast");
  cr_assert_eq(job.store.client->get("world.0/lost/count", soon()), "1");
  cr_assert_eq(loss(*job.store.client, "world.0/lost/rank/4").rank, 4);
}

Test(relay, a_silent_rank_is_lost_by_the_relays_watch, .timeout = 30) {
  Relayed job;
  auto rank = job.rank();
  rank->member("g/", 1, soon());
  rank->heartbeat(300, "", soon());
  auto event = loss(*job.store.client, "g/lost/1");  // no heartbeat follows
  cr_assert_eq(event.rank, 1);
  cr_assert(contains(event.reason, "sent nothing to the store for"), "%s", event.reason.c_str());
}

Test(relay, a_lost_relay_takes_the_ranks_it_carries, .timeout = 30) {
  Relayed job(/*relay_timeout_ms=*/5000);
  auto leaving = job.rank();
  leaving->member("world.0/", 0, soon());
  leaving->heartbeat(5000, "", soon());
  auto a = job.rank();
  a->member("world.0/", 1, soon());
  a->heartbeat(5000, "", soon());
  auto b = job.rank();
  b->member("world.0/", 2, soon());
  b->heartbeat(5000, "", soon());
  leaving->heartbeat(0, "", soon());  // a clean leave: not carried any more
  leaving.reset();

  // The store lists the ranks the relay carries under the relay's name.
  cr_assert(store_test::eventually(
      [&] {
        auto lines = job.store.client->roster("world.0/", soon());
        return lines.size() == 2 && contains(lines[0], "relay ");
      },
      5000));
  job.relay.reset();  // the relay's process ends with ranks still on it

  auto first = loss(*job.store.client, "world.0/lost/1");
  auto second = loss(*job.store.client, "world.0/lost/2");
  cr_assert_eq(first.rank + second.rank, 3, "ranks 1 and 2, got %lld and %lld", static_cast<long long>(first.rank),
               static_cast<long long>(second.rank));
  cr_assert(contains(first.reason, "the relay that carried it to the store"), "%s", first.reason.c_str());
  cr_assert(!job.store.client->check({"world.0/lost/3"}, soon()).at(0), "rank 0 left cleanly: no third loss");
  cr_assert_eq(job.store.client->get("world.0/lost/count", soon()), "2");
}

// A relay in front of a relay (nodes' relays in front of a relay for a group of
// nodes): keys go through both, each relay watches what connects to it, and every loss
// is recorded once at the store, whichever relay saw it.
Test(relay, relays_stack, .timeout = 30) {
  Relayed job(/*relay_timeout_ms=*/5000);
  tutti::store::RelaySetup setup;
  setup.store_host = "127.0.0.1";
  setup.store_port = job.relay->port();
  setup.secret = kSecret;
  setup.heartbeat_interval_ms = 100;
  setup.heartbeat_timeout_ms = 5000;
  auto lower_loop = tutti::loop::Loop::create();
  auto lower = tutti::store::start_relay(lower_loop, setup, soon());
  auto on_lower = [&] {
    return tutti::store::Client::connect(job.store.client_loop, "127.0.0.1", lower->port(), soon(), kSecret);
  };
  auto upper_rank = job.rank();
  auto kept = on_lower();
  auto killed = on_lower();
  upper_rank->member("w/", 10, soon());
  kept->member("w/", 20, soon());
  killed->member("w/", 21, soon());
  for (auto* rank : {upper_rank.get(), kept.get(), killed.get()}) rank->heartbeat(5000, "", soon());

  kept->set("x", "from below", soon());
  cr_assert_eq(job.store.client->get("x", soon()), "from below");
  job.store.client->set("y", "from the store", soon());
  cr_assert_eq(kept->get("y", soon()), "from the store");
  // The store sees every rank as carried by the relay in front of it.
  cr_assert(store_test::eventually(
      [&] {
        auto lines = job.store.client->roster("w/", soon());
        return lines.size() == 3 && contains(lines[0], "relay ") && contains(lines[2], "relay ");
      },
      5000));

  killed.reset();  // a rank's process ends: the lower relay sees it
  auto first = loss(*job.store.client, "w/lost/1");
  cr_assert_eq(first.rank, 21);
  cr_assert(contains(first.reason, "closed"), "%s", first.reason.c_str());

  lower.reset();  // the lower relay's process ends: the upper one sees it, for rank 20
  auto second = loss(*job.store.client, "w/lost/2");
  cr_assert_eq(second.rank, 20);
  cr_assert(contains(second.reason, "the relay that carried it to the store"), "%s", second.reason.c_str());

  job.relay.reset();  // the upper relay's: the store sees it, for rank 10 alone
  auto third = loss(*job.store.client, "w/lost/3");
  cr_assert_eq(third.rank, 10);
  cr_assert(contains(third.reason, "the relay that carried it to the store"), "%s", third.reason.c_str());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  cr_assert_eq(job.store.client->get("w/lost/count", soon()), "3", "each loss recorded once");
}

Test(relay, a_relay_that_loses_its_store_closes_its_ranks_connections, .timeout = 30) {
  Relayed job;
  auto rank = job.rank();
  rank->set("k", "v", soon());
  job.store.client.reset();
  job.store.server.reset();  // the store's process ends
  auto lost = store_test::error_of([&] {
    for (int i = 0; i < 100; ++i) {
      rank->get("k", soon());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  cr_assert(lost.status() == Status::kPeerLost || lost.status() == Status::kTransport, "%s", lost.what());
}

Test(relay, a_relay_gives_the_stores_clock, .timeout = 30) {
  Relayed job;
  auto rank = job.rank();
  std::promise<std::string> clock;
  rank->heartbeat_async(5000, "", [&](Status status, const std::string& message, const std::string& value) {
    clock.set_value(status == Status::kOk ? value : message);
  });
  auto future = clock.get_future();
  cr_assert(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  std::string value = future.get();
  int64_t store_us = std::strtoll(value.c_str(), nullptr, 10);
  // Same machine, same clock: the estimate is within a second of it.
  cr_assert_lt(std::llabs(store_us - tutti::wall_clock_us()), 1000000, "relay's clock for the store: %s",
               value.c_str());
}

// GETs of one key from several ranks wait at the store as one, and its answer reaches
// every rank; a GET that asks to wait less than the one in flight goes up on its own.
Test(relay, gets_of_one_key_wait_at_the_store_as_one, .timeout = 30) {
  Relayed job(/*relay_timeout_ms=*/120000, /*relay_interval_ms=*/60000);  // no heartbeat during the test
  constexpr int kRanks = 8;
  std::vector<std::unique_ptr<tutti::store::Client>> ranks;
  for (int r = 0; r < kRanks; ++r) ranks.push_back(job.rank());
  uint64_t relay_before = job.relay->stats().requests;
  uint64_t store_before = job.store.server->stats().requests;

  std::vector<std::promise<std::string>> got(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ranks[r]->get_async("world.0/lost/1", 20000,
                        [&got, r](Status status, const std::string& message, const std::string& value) {
                          got[r].set_value(status == Status::kOk ? value : message);
                        });
  }
  std::promise<Status> shorter;
  ranks[0]->get_async("world.0/lost/1", 200,
                      [&](Status status, const std::string&, const std::string&) { shorter.set_value(status); });
  cr_assert(store_test::eventually([&] { return job.relay->stats().requests >= relay_before + kRanks + 1; }, 5000));
  auto short_future = shorter.get_future();
  cr_assert(short_future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  cr_assert_eq(short_future.get(), Status::kTimeout, "the shorter GET timed out on its own");

  job.store.client->set("world.0/lost/1", "an event", soon());
  for (int r = 0; r < kRanks; ++r) {
    auto future = got[r].get_future();
    cr_assert(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready, "rank %d was not answered", r);
    cr_assert_eq(future.get(), "an event");
  }
  // Up: the shared GET, the shorter GET of its own, and the test's SET.
  cr_expect_eq(job.store.server->stats().requests - store_before, 3u, "the store served %llu requests",
               static_cast<unsigned long long>(job.store.server->stats().requests - store_before));
}

// The bookkeeping itself: who joins, who goes alone, and who times out when.
Test(relay, shared_gets_time_out_each_at_its_own_deadline, .timeout = 10) {
  using tutti::store::SharedGets;
  SharedGets gets;
  cr_assert(gets.join("k", {1, 1, 1000, 10}) == SharedGets::Join::kAskUp);
  cr_assert(gets.join("k", {2, 1, 1005, 10}) == SharedGets::Join::kJoined);
  cr_assert(gets.join("k", {3, 1, 5000, 40}) == SharedGets::Join::kJoined);
  cr_assert(gets.join("k", {4, 1, 900, 9}) == SharedGets::Join::kAlone, "it would wait past its deadline");
  uint64_t next = 0;
  auto due = gets.timed_out("k", 1000, &next);
  cr_assert_eq(due.size(), 2u, "1 at its deadline and 2 within its slack");
  cr_assert_eq(next, 5000u, "3 waits on a new shared GET");
  cr_assert(gets.join("k", {5, 1, 4000, 40}) == SharedGets::Join::kAlone);
  auto answered = gets.answered("k");
  cr_assert(answered.size() == 1 && answered[0].serial == 3);
  cr_assert_eq(gets.keys(), 0u);
}
