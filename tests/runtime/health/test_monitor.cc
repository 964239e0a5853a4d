// The failure detector (runtime/health/monitor.h) against a real store on loopback,
// each rank with its own event loop and connection as a process would have: heartbeats
// carry the activity; a peer killed, or frozen past its timeout, is reported once,
// named with its host, pid and what it was doing, and a late heartbeat within the
// timeout is none; losses keep the store's order; a clean leave is no loss; a store
// that goes away or stops answering is the store's loss; and a process frozen with the
// store it serves is told it was declared lost, without blaming the store. A frozen
// process is a loop kept busy by a task that sleeps.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/identity.h"
#include "runtime/health/monitor.h"
#include "runtime/store/heartbeat_settings.h"
#include "runtime/store/loss_event.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::eventually;
using store_test::ms_since;
using store_test::soon;
using tutti::Status;
using tutti::health::Activity;
using tutti::health::ActivityBoard;
using tutti::health::Monitor;
using tutti::health::MonitorSetup;

namespace {

constexpr int kSize = 3;
const char* const kPrefix = "w/";

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// What on_failure was called with, in order.
class Reports {
 public:
  void add(Status status, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    list_.emplace_back(status, why);
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return list_.size();
  }
  std::pair<Status, std::string> at(size_t i) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return list_.at(i);
  }
  std::string all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string text;
    for (const auto& [status, why] : list_) text += tutti::concat("[", tutti::status_word(status), "] ", why, "\n");
    return text.empty() ? "(none)" : text;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<Status, std::string>> list_;
};

// One rank of group kPrefix with a monitor: its own loop, connection and board.
// By default on a loop of its own; on the store's, as the rank serving the store has it.
struct Rank {
  Rank(uint16_t port, int rank, int64_t interval_ms, int64_t timeout_ms,
       std::shared_ptr<tutti::loop::Loop> on = tutti::loop::Loop::create())
      : loop(std::move(on)),
        client(tutti::store::Client::connect(loop, "127.0.0.1", port, soon())),
        board(*client, kPrefix, rank, kSize) {
    MonitorSetup setup;
    setup.loop = loop;
    setup.store = client.get();
    setup.prefix = kPrefix;
    setup.rank = rank;
    setup.where = tutti::concat("comm \"w\" (rank ", rank, " of ", kSize, ")");
    setup.store_owner = "rank 0";
    setup.interval_ms = interval_ms;
    setup.timeout_ms = timeout_ms;
    setup.board = &board;
    setup.on_failure = [this](Status status, const std::string& why) { reports.add(status, why); };
    client->member(kPrefix, rank, soon());  // as the meeting says it
    monitor = Monitor::start(std::move(setup));
  }
  // Keeps its loop busy for ms, as a stopped process's would be; returns at once.
  void freeze_ms(int ms) { freeze(*loop, ms); }
  static void freeze(tutti::loop::Loop& loop, int ms) {
    loop.post([ms] { pause_ms(ms); });
  }

  std::shared_ptr<tutti::loop::Loop> loop;
  std::unique_ptr<tutti::store::Client> client;
  ActivityBoard board;
  Reports reports;
  std::unique_ptr<Monitor> monitor;
};

// Rank 0 of the process that serves the store: the store and the rank on one loop.
struct HostingRank {
  explicit HostingRank(int64_t timeout_ms)
      : server(tutti::store::Server::start(loop, "127.0.0.1", 0, {}, "")),
        rank(server->port(), 0, 100, timeout_ms, loop) {}

  std::shared_ptr<tutti::loop::Loop> loop = tutti::loop::Loop::create();
  std::unique_ptr<tutti::store::Server> server;
  Rank rank;
};

// A rank without a monitor: a watched connection, as a rank's would be.
std::unique_ptr<tutti::store::Client> bare_rank(store_test::Store& store, int rank, const std::string& activity) {
  auto client = store.connect();
  client->member(kPrefix, rank, soon());
  client->heartbeat(10000, activity, soon());
  return client;
}

std::string running(uint32_t seq, const char* name) {
  Activity activity;
  activity.seq = seq;
  activity.running = true;
  activity.name = name;
  return encode(activity);
}

// "host h, pid 123", as the reports name this process.
std::string this_process() {
  std::string identity = tutti::process_identity();
  size_t colon = identity.rfind(':');
  return tutti::concat("host ", identity.substr(0, colon), ", pid ", identity.substr(colon + 1));
}

}  // namespace

Test(monitor, start_joins_and_heartbeats_carry_the_activity, .timeout = 30) {
  store_test::Store store;
  Rank rank(store.server->port(), 0, 100, 2000);
  auto published = [&] {
    return tutti::health::decode_activity(store.client->get(tutti::store::activity_key(kPrefix, 0), soon()));
  };
  auto first = published();
  cr_assert(first.has_value(), "start() reports the activity with its first heartbeat");
  cr_expect_eq(first->seq, 0u);

  tutti::health::OpFacts facts;
  facts.name = "all_reduce";
  rank.board.started_now(3, facts, tutti::coarse_now_ms());
  cr_expect(eventually([&] { return published()->seq == 3 && published()->running; }, 3000),
            "the heartbeats did not carry the new activity");
  cr_expect_eq(rank.reports.count(), 0u, "%s", rank.reports.all().c_str());
  cr_expect_not(rank.monitor->store_lost());
}

Test(monitor, killed_peer_is_reported_once_with_what_it_was_doing, .timeout = 30) {
  store_test::Store store;
  Rank rank(store.server->port(), 0, 100, 5000);
  auto peer = bare_rank(store, 1, running(7, "all_reduce"));
  peer.reset();  // closed without leaving: as a killed process's

  cr_assert(eventually([&] { return rank.reports.count() > 0; }, 5000), "the loss was not reported");
  auto [status, why] = rank.reports.at(0);
  cr_expect(status == Status::kPeerLost);
  cr_expect_eq(
      why.rfind(tutti::concat("rank 1 (", this_process(), ") was lost: its connection to the store closed"), 0), 0u,
      "%s", why.c_str());
  cr_expect(contains(why, " before, had it in all_reduce #7"), "%s", why.c_str());
  // Listed just after the report (monitor.cc: once the communicator is stopped).
  cr_expect(eventually([&] { return rank.monitor->lost_ranks() == std::vector<int>{1}; }, 2000),
            "lost_ranks() is not {1}");
  pause_ms(500);
  cr_expect_eq(rank.reports.count(), 1u, "reported more than once:\n%s", rank.reports.all().c_str());
  cr_expect_not(rank.monitor->store_lost());
}

Test(monitor, losses_keep_the_order_the_store_declared_them_in, .timeout = 30) {
  store_test::Store store;
  Rank rank(store.server->port(), 0, 100, 5000);
  auto one = bare_rank(store, 1, running(2, "barrier"));
  auto two = bare_rank(store, 2, running(2, "barrier"));
  two.reset();
  cr_assert(eventually([&] { return rank.reports.count() == 1; }, 5000), "%s", rank.reports.all().c_str());
  one.reset();
  cr_assert(eventually([&] { return rank.reports.count() == 2; }, 5000), "%s", rank.reports.all().c_str());
  cr_expect(eventually(
                [&] {
                  return rank.monitor->lost_ranks() == std::vector<int>{2, 1};
                },
                2000),
            "lost_ranks() is not {2, 1}");
  cr_expect_eq(rank.reports.at(0).second.rfind("rank 2 (", 0), 0u, "%s", rank.reports.all().c_str());
  cr_expect_eq(rank.reports.at(1).second.rfind("rank 1 (", 0), 0u, "%s", rank.reports.all().c_str());
}

// Rank 1's process stops for three heartbeat timeouts: rank 0 learns within about one
// timeout (not before it) why and where rank 1 was; rank 1, resumed, learns that it is
// out. Each is told once.
Test(monitor, frozen_peer_is_lost_after_its_timeout_and_told_so_when_it_wakes, .timeout = 30) {
  const int timeout_ms = 1000;
  store_test::Store store;
  Rank rank0(store.server->port(), 0, 100, timeout_ms);
  Rank rank1(store.server->port(), 1, 100, timeout_ms);
  tutti::health::OpFacts facts;
  facts.name = "broadcast";
  rank1.board.started_now(5, facts, tutti::coarse_now_ms());
  pause_ms(300);  // a few heartbeats carry it

  auto frozen = store_test::Clock::now();
  rank1.freeze_ms(3 * timeout_ms);
  cr_assert(eventually([&] { return rank0.reports.count() > 0; }, 3 * timeout_ms), "rank 1 was never declared lost");
  int64_t took = ms_since(frozen);
  cr_expect_geq(took, timeout_ms - 200, "declared lost %lld ms into a freeze, before its %d ms timeout",
                static_cast<long long>(took), timeout_ms);
  auto [status, why] = rank0.reports.at(0);
  cr_expect(status == Status::kPeerLost);
  cr_expect_eq(why.rfind("rank 1 (" + this_process() + ") was lost: it sent nothing to the store for ", 0), 0u, "%s",
               why.c_str());
  cr_expect(contains(why, "(heartbeat timeout 1 s)"), "%s", why.c_str());
  cr_expect(contains(why, " before, had it in broadcast #5"), "%s", why.c_str());
  cr_expect(eventually([&] { return rank0.monitor->lost_ranks() == std::vector<int>{1}; }, 2000),
            "lost_ranks() is not {1}");

  // Once it runs again, rank 1 learns it is out: from the loss event, or from the store
  // closing its connection, whichever it reads first.
  cr_assert(eventually([&] { return rank1.reports.count() > 0; }, 4 * timeout_ms), "rank 1 never learnt it is out");
  cr_expect(rank1.monitor->store_lost());
  std::string own = rank1.reports.at(0).second;
  cr_expect(contains(own, "this rank was declared lost by the rendezvous store: it sent nothing to the store for") ||
                contains(own, "the rendezvous store at " + store.address() + ", hosted by rank 0, is lost: "),
            "%s", own.c_str());
  pause_ms(300);
  cr_expect_eq(rank0.reports.count(), 1u, "%s", rank0.reports.all().c_str());
  cr_expect_eq(rank1.reports.count(), 1u, "%s", rank1.reports.all().c_str());
  cr_expect_not(rank0.monitor->store_lost());
}

// A freeze shorter than the timeout makes heartbeats late, not missing: nobody is lost.
Test(monitor, late_heartbeat_within_the_timeout_is_no_loss, .timeout = 30) {
  const int timeout_ms = 1500;
  store_test::Store store;
  Rank rank0(store.server->port(), 0, 100, timeout_ms);
  Rank rank1(store.server->port(), 1, 100, timeout_ms);
  rank1.freeze_ms(timeout_ms * 2 / 5);
  pause_ms(timeout_ms + 500);
  cr_expect_eq(rank0.reports.count(), 0u, "%s", rank0.reports.all().c_str());
  cr_expect_eq(rank1.reports.count(), 0u, "%s", rank1.reports.all().c_str());
  cr_expect(rank0.monitor->lost_ranks().empty());
}

// A monitor that ends leaves the store's watch, so the connection closing after it is
// no loss.
Test(monitor, clean_leave_is_no_loss, .timeout = 30) {
  store_test::Store store;
  Rank rank0(store.server->port(), 0, 100, 5000);
  auto rank1 = std::make_unique<Rank>(store.server->port(), 1, 100, 5000);
  rank1.reset();
  pause_ms(500);
  cr_expect_eq(rank0.reports.count(), 0u, "%s", rank0.reports.all().c_str());
  cr_expect_not(store.client->check({tutti::store::lost_count_key(kPrefix)}, soon()).at(0));
}

Test(monitor, store_that_goes_away_is_lost_once, .timeout = 30) {
  store_test::Store store;
  Rank rank(store.server->port(), 0, 100, 5000);
  std::string address = store.address();
  store.client.reset();
  store.server.reset();
  cr_assert(eventually([&] { return rank.reports.count() > 0; }, 5000), "the store's end was not reported");
  auto [status, why] = rank.reports.at(0);
  cr_expect(status == Status::kPeerLost);
  cr_expect_eq(why.rfind("the rendezvous store at " + address + ", hosted by rank 0, is lost: ", 0), 0u, "%s",
               why.c_str());
  cr_expect(rank.monitor->store_lost());
  cr_expect(rank.monitor->lost_ranks().empty());
  pause_ms(500);
  cr_expect_eq(rank.reports.count(), 1u, "%s", rank.reports.all().c_str());
}

// The store's process stops (its loop only: this rank's runs on) past the timeout: the
// unanswered heartbeat makes it the store's loss.
Test(monitor, store_that_stops_answering_is_lost_after_the_timeout, .timeout = 30) {
  const int timeout_ms = 1000;
  store_test::Store store;
  Rank rank(store.server->port(), 0, 100, timeout_ms);
  auto frozen = store_test::Clock::now();
  Rank::freeze(*store.server_loop, 3 * timeout_ms);
  cr_assert(eventually([&] { return rank.reports.count() > 0; }, 3 * timeout_ms), "the store was never declared lost");
  int64_t took = ms_since(frozen);
  cr_expect_geq(took, timeout_ms, "the store was declared lost %lld ms into its freeze", static_cast<long long>(took));
  auto [status, why] = rank.reports.at(0);
  cr_expect(status == Status::kPeerLost);
  std::string lost = "the rendezvous store at " + store.address() + ", hosted by rank 0, is lost: it has not answered";
  cr_expect_eq(why.rfind(lost, 0), 0u, "%s", why.c_str());
  cr_expect(contains(why, "(heartbeat timeout 1 s): its process is frozen or cut off"), "%s", why.c_str());
  cr_expect(rank.monitor->store_lost());
}

// The process serving the store stops past the timeout, this rank with it (one loop
// for both, as in that process): the time its loop did not run is not the store's
// silence, so it does not blame the store, and learns instead that the store, which
// knows it was frozen, declared it lost.
Test(monitor, process_frozen_with_its_store_does_not_blame_the_store, .timeout = 30) {
  const int timeout_ms = 1000;
  HostingRank process(timeout_ms);
  Rank& rank = process.rank;
  pause_ms(300);  // the store has its watch parked, and has had a few heartbeats
  rank.freeze_ms(3 * timeout_ms);
  cr_assert(eventually([&] { return rank.reports.count() > 0; }, 6 * timeout_ms), "the freeze went unreported");
  std::string why = rank.reports.at(0).second;
  cr_expect_eq(why.rfind("this rank was declared lost by the rendezvous store: its process, which serves the "
                         "rendezvous store, was frozen for ",
                         0),
               0u, "%s", rank.reports.all().c_str());
  cr_expect(rank.monitor->store_lost());
}

// The same freeze within the timeout: nobody is lost.
Test(monitor, short_freeze_of_the_process_with_its_store_is_no_loss, .timeout = 30) {
  const int timeout_ms = 1500;
  HostingRank process(timeout_ms);
  Rank& rank = process.rank;
  rank.freeze_ms(timeout_ms * 2 / 5);
  pause_ms(timeout_ms + 500);
  cr_expect_eq(rank.reports.count(), 0u, "%s", rank.reports.all().c_str());
  cr_expect_not(rank.monitor->store_lost());
}

Test(monitor, heartbeat_settings_default_and_are_checked) {
  unsetenv("TUTTI_HEARTBEAT_INTERVAL_MS");
  unsetenv("TUTTI_HEARTBEAT_TIMEOUT_MS");
  int64_t interval = 0, timeout = 0;
  tutti::store::read_heartbeat_settings(&interval, &timeout);
  cr_expect(interval == 1000 && timeout == 20000, "defaults %lld and %lld", static_cast<long long>(interval),
            static_cast<long long>(timeout));

  setenv("TUTTI_HEARTBEAT_INTERVAL_MS", "250", 1);
  setenv("TUTTI_HEARTBEAT_TIMEOUT_MS", "500", 1);
  tutti::store::read_heartbeat_settings(&interval, &timeout);
  cr_expect(interval == 250 && timeout == 500);

  setenv("TUTTI_HEARTBEAT_TIMEOUT_MS", "499", 1);
  tutti::Error error = store_test::error_of([&] { tutti::store::read_heartbeat_settings(&interval, &timeout); });
  cr_expect(error.status() == Status::kInvalidArgument);
  cr_expect(contains(error.what(),
                     "TUTTI_HEARTBEAT_TIMEOUT_MS (499) is under two heartbeat intervals "
                     "(TUTTI_HEARTBEAT_INTERVAL_MS = 250)"),
            "%s", error.what());

  setenv("TUTTI_HEARTBEAT_TIMEOUT_MS", "soon", 1);
  error = store_test::error_of([&] { tutti::store::read_heartbeat_settings(&interval, &timeout); });
  cr_expect(error.status() == Status::kInvalidArgument);
  cr_expect(contains(error.what(), "TUTTI_HEARTBEAT_TIMEOUT_MS"), "%s", error.what());
}
