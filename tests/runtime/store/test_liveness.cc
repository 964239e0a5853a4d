// The store's side of failure detection (liveness.h), through real connections: a
// watched connection that closes or goes silent becomes a loss event under each group
// it is a member of; a clean leave, or a connection never watched, is no loss.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "runtime/store/loss_event.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::soon;
using tutti::Status;
using tutti::store::decode_loss_event;

namespace {

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool exists(tutti::store::Client& client, const std::string& key) { return client.check({key}, soon()).at(0); }

}  // namespace

Test(liveness, closed_watched_connection_is_lost_in_each_of_its_groups, .timeout = 30) {
  store_test::Store store;
  auto rank = store.connect();
  rank->member("world.0/", 3, soon());
  rank->member("world.0/split.1/", 1, soon());
  rank->heartbeat(5000, "7 1 1700000000000 all_reduce", soon());
  cr_assert_eq(store.client->get("world.0/activity/3", soon()), "7 1 1700000000000 all_reduce");
  rank.reset();  // closes without stopping the watch: as a killed process would

  auto event = decode_loss_event(store.client->get("world.0/lost/1", soon()));
  cr_assert(event.has_value());
  cr_assert_eq(event->rank, 3);
  cr_assert(contains(event->identity, ":" + std::to_string(getpid())), "%s", event->identity.c_str());
  cr_assert(contains(event->address, "127.0.0.1:"), "%s", event->address.c_str());
  cr_assert(contains(event->reason, "its connection to the store closed"), "%s", event->reason.c_str());
  cr_assert_eq(event->activity, "7 1 1700000000000 all_reduce");
  cr_assert_geq(event->activity_age_ms, 0);
  cr_assert_eq(store.client->get("world.0/lost/count", soon()), "1");
  cr_assert(exists(*store.client, "world.0/lost/rank/3"));

  auto in_split = decode_loss_event(store.client->get("world.0/split.1/lost/1", soon()));
  cr_assert(in_split.has_value());
  cr_assert_eq(in_split->rank, 1, "the split's event gives the rank in the split");
}

Test(liveness, clean_leave_and_unwatched_connections_are_no_loss, .timeout = 30) {
  store_test::Store store;
  auto leaving = store.connect();
  leaving->member("g/", 0, soon());
  leaving->heartbeat(5000, "", soon());
  leaving->heartbeat(0, "", soon());
  leaving.reset();
  auto never_watched = store.connect();
  never_watched->member("g/", 1, soon());
  never_watched.reset();
  auto left_group = store.connect();
  left_group->member("g/", 2, soon());
  left_group->member("g/", -1, soon());
  left_group->heartbeat(5000, "", soon());
  left_group.reset();
  pause_ms(300);
  cr_assert_not(exists(*store.client, "g/lost/1"));
  cr_assert_not(exists(*store.client, "g/lost/count"));
}

Test(liveness, silent_connection_is_declared_lost_then_closed, .timeout = 30) {
  store_test::Store store;
  auto silent = store.connect();
  silent->member("g/", 5, soon());
  auto start = store_test::Clock::now();
  silent->heartbeat(400, "", soon());  // and then nothing

  auto event = decode_loss_event(store.client->get("g/lost/1", soon()));
  int64_t took = store_test::ms_since(start);
  cr_assert(event.has_value());
  cr_assert_eq(event->rank, 5);
  cr_assert(contains(event->reason, "sent nothing to the store for"), "%s", event->reason.c_str());
  cr_assert(contains(event->reason, "heartbeat timeout 0.4 s"), "%s", event->reason.c_str());
  cr_assert_geq(took, 400, "declared lost after %lld ms, before its timeout", static_cast<long long>(took));
  cr_assert_eq(event->activity_age_ms, -1, "it never reported an activity");

  // The store closed it: the frozen process learns so when it wakes.
  tutti::Error error = store_test::error_of([&] { silent->set("k", "v", soon()); });
  cr_assert(error.status() == Status::kPeerLost || error.status() == Status::kTransport, "%s", error.what());
  pause_ms(200);
  cr_assert_eq(store.client->get("g/lost/count", soon()), "1", "lost once, not again when closed");
}

Test(liveness, heartbeats_keep_a_connection_watched, .timeout = 30) {
  store_test::Store store;
  auto beating = store.connect();
  beating->member("g/", 0, soon());
  for (int i = 0; i < 10; ++i) {
    beating->heartbeat(300, "", soon());
    pause_ms(100);
  }
  cr_assert_not(exists(*store.client, "g/lost/1"));
  beating->heartbeat(0, "", soon());
}

Test(liveness, member_needs_a_prefix, .timeout = 30) {
  store_test::Store store;
  tutti::Error error = store_test::error_of([&] { store.client->member("", 0, soon()); });
  cr_assert_eq(error.status(), Status::kInvalidArgument);
  cr_assert(contains(error.what(), "MEMBER needs a key prefix"), "%s", error.what());
}
