// The store's side of failure detection (liveness.h), through real connections: a
// watched connection that closes or goes silent becomes a loss event under each group
// it is a member of; a clean leave, or a connection never watched, is no loss. Then,
// on a clock of the test's own, what a sweep that comes late (the store's own loop
// stalled) makes of the silence it caused.
#include <unistd.h>

#include <chrono>
#include <optional>
#include <thread>

#include "runtime/common/identity.h"
#include "runtime/store/key_space.h"
#include "runtime/store/liveness.h"
#include "runtime/store/loss_event.h"
#include "runtime/store/roster.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::soon;
using tutti::Status;
using tutti::store::decode_loss_event;
using tutti::store::LossEvent;
using tutti::store::RosterEntry;

namespace {

std::vector<RosterEntry> roster(tutti::store::Client& client, const std::string& prefix) {
  std::vector<RosterEntry> entries;
  for (const auto& line : client.roster(prefix, soon())) {
    auto entry = tutti::store::decode_roster_entry(line);
    cr_assert(entry.has_value(), "not a roster entry: %s", line.c_str());
    entries.push_back(*entry);
  }
  return entries;
}

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
  cr_assert_eq(event->address, store_test::Store::client_peer(), "%s", event->address.c_str());
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
  cr_assert(contains(event->reason, "heartbeat timeout 400 ms"), "%s", event->reason.c_str());
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

Test(liveness, the_roster_says_what_each_member_does_and_how_long_it_has_been_silent, .timeout = 30) {
  store_test::Store store;
  auto first = store.connect();
  auto second = store.connect();
  second->member("world.0/", 1, soon());
  second->heartbeat(5000, "4 0 1700000000000 broadcast", soon());
  first->member("world.0/", 0, soon());
  first->member("world.0/split.1/", 0, soon());
  first->heartbeat(5000, "5 1 1700000000000 all_reduce", soon());
  pause_ms(300);
  second->heartbeat(5000, "5 1 1700000000000 all_reduce", soon());

  std::vector<RosterEntry> world = roster(*store.client, "world.0/");
  cr_assert_eq(world.size(), 2u, "the members of world.0/ only, not the split's");
  cr_assert_eq(world[0].rank, 0, "by rank");
  cr_assert_eq(world[1].rank, 1);
  cr_assert_eq(world[0].activity, "5 1 1700000000000 all_reduce");
  cr_assert(contains(world[1].identity, ":" + std::to_string(getpid())), "%s", world[1].identity.c_str());
  cr_assert_eq(world[0].timeout_ms, 5000);
  cr_assert_geq(world[0].silent_ms, 250, "rank 0 has said nothing for 300 ms: %lld",
                static_cast<long long>(world[0].silent_ms));
  cr_assert_lt(world[1].silent_ms, 250, "rank 1 just beat: %lld", static_cast<long long>(world[1].silent_ms));

  std::vector<RosterEntry> all = roster(*store.client, "");
  cr_assert_eq(all.size(), 3u, "every group: %zu", all.size());
  cr_assert_eq(all[2].prefix, "world.0/split.1/");

  second->heartbeat(0, "", soon());  // a clean leave: still a member, no longer watched
  cr_assert_eq(roster(*store.client, "world.0/")[1].timeout_ms, 0);
  first.reset();  // lost: no longer a member; its loss event says why
  store.client->get("world.0/lost/1", soon());
  world = roster(*store.client, "world.0/");
  cr_assert_eq(world.size(), 1u);
  cr_assert_eq(world[0].rank, 1);
  cr_assert(roster(*store.client, "nobody/").empty());
}

Test(liveness, member_needs_a_prefix, .timeout = 30) {
  store_test::Store store;
  tutti::Error error = store_test::error_of([&] { store.client->member("", 0, soon()); });
  cr_assert_eq(error.status(), Status::kInvalidArgument);
  cr_assert(contains(error.what(), "MEMBER needs a key prefix"), "%s", error.what());
}

namespace {

constexpr uint64_t kSweepMs = 100;
constexpr int64_t kTimeoutMs = 2000;

// A Liveness without a server: connections are made-up pointers, the clock is now_ms,
// and the test calls sweep() where the server's timer would.
struct Watch {
  Watch() : keys({}, [](std::unique_ptr<tutti::store::Waiter>) {}), sink(keys), liveness(sink, kSweepMs) {}

  // Connection `rank` of group "g/", from a process named identity, starts beating.
  const void* join(int rank, const std::string& identity) {
    const void* conn = &conns[rank];
    liveness.member(conn, "g/", rank);
    liveness.heartbeat(conn, identity, "127.0.0.1:1", kTimeoutMs, "", now_ms);
    return conn;
  }
  // Sweeps every kSweepMs, as the timer would, until until_ms; returns what they closed.
  std::vector<const void*> sweep_until(uint64_t until_ms) {
    std::vector<const void*> closed;
    while (now_ms + kSweepMs <= until_ms) {
      now_ms += kSweepMs;
      for (const void* conn : liveness.sweep(now_ms)) closed.push_back(conn);
    }
    return closed;
  }
  std::optional<LossEvent> lost(int rank) {
    tutti::store::protocol::Request get;
    get.op = tutti::store::protocol::Op::kGet;
    get.keys = {tutti::store::lost_rank_key("g/", rank)};
    get.number = 0;  // answer at once
    auto reply = keys.handle(get);
    if (!reply || reply->status != Status::kOk) return std::nullopt;
    return decode_loss_event(reply->values.at(0));
  }

  char conns[3] = {};
  uint64_t now_ms = 1000;
  tutti::store::KeySpace keys;
  tutti::store::KeySpaceSink sink;
  tutti::store::Liveness liveness;
};

}  // namespace

Test(liveness, late_sweep_blames_nobody_for_the_stores_own_stall, .timeout = 10) {
  Watch watch;
  const void* beating = watch.join(1, "elsewhere:101");
  const void* silent = watch.join(2, "elsewhere:102");
  cr_assert(watch.sweep_until(1500).empty());

  // The store's loop stalls 3 s, past the timeout; then its timer's late sweep runs
  // before it reads what the ranks sent meanwhile.
  watch.now_ms += kSweepMs + 3000;
  cr_assert(watch.liveness.sweep(watch.now_ms).empty(), "a rank was declared lost for the store's own stall");
  cr_assert_not(watch.lost(1).has_value());
  cr_assert_not(watch.lost(2).has_value());

  // Silence outside the stall still counts. Rank 1 beats on, rank 2 stays silent: it
  // had been silent 500 ms when the stall began, so it has 1.5 s left after it.
  uint64_t resumed_ms = watch.now_ms;
  for (uint64_t until = resumed_ms + 400; until <= resumed_ms + 1400; until += 500) {
    cr_assert(watch.sweep_until(until).empty(), "declared lost by %llu ms after the stall",
              static_cast<unsigned long long>(until - resumed_ms));
    watch.liveness.heard_from(beating, watch.now_ms);
  }
  auto closed = watch.sweep_until(resumed_ms + 1900);
  cr_assert(closed.size() == 1 && closed[0] == silent, "rank 2 stayed silent past its timeout and was not lost");
  auto event = watch.lost(2);
  cr_assert(event.has_value());
  cr_assert(contains(event->reason, "sent nothing to the store for 2.1 s"), "%s", event->reason.c_str());
  cr_assert_not(watch.lost(1).has_value(), "rank 1 kept beating after the stall");
}

// Watches are kept by when they fall due, not swept one by one: each connection is held
// to its own timeout, and any frame from it moves its due time.
Test(liveness, each_watch_falls_due_by_its_own_timeout_and_last_frame, .timeout = 10) {
  Watch watch;
  const void* slow = watch.join(0, "elsewhere:100");  // 2 s, from 1.0 s
  const void* quick = &watch.conns[1];
  watch.liveness.member(quick, "g/", 1);
  watch.liveness.heartbeat(quick, "elsewhere:101", "127.0.0.1:1", 500, "", watch.now_ms);  // 0.5 s
  const void* talking = watch.join(2, "elsewhere:102");                                    // 2 s, but it sends frames
  std::vector<const void*> closed = watch.sweep_until(1500);
  cr_assert(closed.empty(), "lost at its timeout exactly, not before");
  closed = watch.sweep_until(1600);
  cr_assert(closed.size() == 1 && closed[0] == quick, "the 0.5 s watch was not the first lost");
  watch.liveness.heard_from(talking, 2500);
  closed = watch.sweep_until(3100);
  cr_assert(closed.size() == 1 && closed[0] == slow, "only the silent 2 s watch is due by 3.1 s");
  cr_assert(watch.sweep_until(4500).empty(), "a frame at 2.5 s keeps it until 4.5 s");
  closed = watch.sweep_until(4600);
  cr_assert(closed.size() == 1 && closed[0] == talking);
  cr_assert(!watch.liveness.watching());
}

Test(liveness, own_process_frozen_past_its_timeout_is_declared_lost, .timeout = 10) {
  Watch watch;
  const void* own = watch.join(0, tutti::process_identity());
  watch.join(1, "elsewhere:101");
  cr_assert(watch.sweep_until(1500).empty());

  watch.now_ms += kSweepMs + 2500;  // the whole process, store and rank 0, stopped for 2.5 s
  auto closed = watch.liveness.sweep(watch.now_ms);
  cr_assert_eq(closed.size(), 1u, "%zu connections closed", closed.size());
  cr_assert_eq(closed[0], own);
  auto event = watch.lost(0);
  cr_assert(event.has_value(), "the store's own rank was not declared lost");
  cr_assert(contains(event->reason, "which serves the rendezvous store, was frozen for 2.5 s"), "%s",
            event->reason.c_str());
  cr_assert(contains(event->reason, "heartbeat timeout (2 s)"), "%s", event->reason.c_str());
  cr_assert_not(contains(event->reason, "sent nothing"), "%s", event->reason.c_str());
  cr_assert_not(watch.lost(1).has_value(), "rank 1 was blamed for the store's stall");
}

Test(liveness, own_process_stalled_within_its_timeout_is_not_lost, .timeout = 10) {
  Watch watch;
  watch.join(0, tutti::process_identity());
  watch.join(1, "elsewhere:101");
  cr_assert(watch.sweep_until(1500).empty());

  watch.now_ms += kSweepMs + 1500;  // a long stall, but within the 2 s timeout
  cr_assert(watch.liveness.sweep(watch.now_ms).empty());
  cr_assert_not(watch.lost(0).has_value());
  cr_assert_not(watch.lost(1).has_value());
}

// on_silent_loss (ServerLimits::on_silent_loss, which tutti launch --restart uses to
// kill frozen ranks) hears of a connection lost for its silence, with its identity and
// why, and not of one whose connection closed.
Test(liveness, silent_losses_are_told_and_closed_connections_are_not, .timeout = 10) {
  tutti::store::KeySpace keys({}, [](std::unique_ptr<tutti::store::Waiter>) {});
  tutti::store::KeySpaceSink sink(keys);
  std::vector<std::pair<std::string, std::string>> told;
  tutti::store::Liveness liveness(sink, kSweepMs, true, [&](const std::string& identity, const std::string& reason) {
    told.emplace_back(identity, reason);
  });
  char conns[2] = {};
  for (int rank = 0; rank < 2; ++rank) {
    liveness.member(&conns[rank], "g/", rank);
    liveness.heartbeat(&conns[rank], "elsewhere:10" + std::to_string(rank), "127.0.0.1:1", 500, "", 1000);
  }
  liveness.closed(&conns[0], "its connection to the store closed", 1100);
  cr_assert(told.empty(), "a closed connection was told as a silent loss");
  size_t closed = 0;
  for (uint64_t now_ms = 1100; now_ms <= 1700; now_ms += kSweepMs) closed += liveness.sweep(now_ms).size();
  cr_assert_eq(closed, 1u, "rank 1 was silent past its 500 ms");
  cr_assert_eq(told.size(), 1u);
  cr_assert_eq(told[0].first, "elsewhere:101");
  cr_assert(contains(told[0].second, "sent nothing to the store for"), "%s", told[0].second.c_str());
}
