// The meeting (runtime/rendezvous/meeting.cc) against a real store: ranks learn their
// places, and a rank the store turns away for want of room fails the others at once,
// naming why, instead of leaving them to wait out their init timeout.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/rendezvous/meeting.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::ms_since;
using store_test::soon;
using tutti::Deadline;
using tutti::Error;
using tutti::Status;
namespace rendezvous = tutti::rendezvous;

namespace {

rendezvous::Plan plan_of(const store_test::Store& store, int rank, int size) {
  rendezvous::Plan plan;
  plan.init_method = tutti::concat("tcp://", store.address());
  plan.rank = rank;
  plan.world_size = size;
  plan.node_key = rank < 2 ? "node-a" : "node-b";
  return plan;
}

// What meet() threw on each rank: "" for none.
std::vector<std::string> meet_all(store_test::Store& store, const std::vector<tutti::store::Client*>& clients, int size,
                                  Deadline deadline, std::vector<rendezvous::Place>* places) {
  std::vector<std::string> errors(clients.size());
  places->resize(clients.size());
  std::vector<std::thread> ranks;
  for (size_t r = 0; r < clients.size(); ++r) {
    ranks.emplace_back([&, r] {
      try {
        (*places)[r] = rendezvous::meet(*clients[r], "m/", plan_of(store, static_cast<int>(r), size),
                                        tutti::concat("test:", r), deadline, "tutti_comm_init");
      } catch (const Error& e) {
        errors[r] = tutti::concat(static_cast<int>(e.status()), " ", e.what());
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  return errors;
}

}  // namespace

Test(meeting, ranks_learn_their_places, .timeout = 30) {
  store_test::Store store;
  std::vector<std::unique_ptr<tutti::store::Client>> owned;
  std::vector<tutti::store::Client*> clients;
  for (int r = 0; r < 3; ++r) {
    owned.push_back(store.connect());
    clients.push_back(owned.back().get());
  }
  std::vector<rendezvous::Place> places;
  auto errors = meet_all(store, clients, 3, soon(), &places);
  for (int r = 0; r < 3; ++r) cr_assert(errors[r].empty(), "rank %d: %s", r, errors[r].c_str());
  // Ranks 0 and 1 share node-a, rank 2 is alone on node-b.
  cr_assert(places[0].local_rank == 0 && places[0].local_size == 2 && places[0].node_rank == 0);
  cr_assert(places[1].local_rank == 1 && places[1].local_size == 2 && places[1].node_rank == 0);
  cr_assert(places[2].local_rank == 0 && places[2].local_size == 1 && places[2].node_rank == 1);
}

Test(meeting, a_rank_the_store_turns_away_fails_the_others_at_once, .timeout = 60) {
  tutti::store::ServerLimits limits;
  limits.max_connections = 3;  // the fixture's own client, ranks 0 and 1
  store_test::Store store(limits);
  auto rank0 = store.connect();
  auto rank1 = store.connect();
  auto refused = store_test::error_of([&] { store.connect(); });
  cr_assert(refused.status() == Status::kTransport && contains(refused.what(), "max_connections (3)"), "%s",
            refused.what());

  auto start = store_test::Clock::now();
  std::vector<rendezvous::Place> places;
  // Rank 2 can never come: the others must not wait out this minute.
  auto errors = meet_all(store, {rank0.get(), rank1.get()}, 3, Deadline::after_ms(60000), &places);
  int64_t took = ms_since(start);
  for (int r = 0; r < 2; ++r) {
    cr_assert(contains(errors[r], tutti::concat(static_cast<int>(Status::kTransport), " ")), "rank %d: %s", r,
              errors[r].c_str());
    cr_assert(contains(errors[r], "the store turned away the connection from " + store_test::Store::client_peer()) &&
                  contains(errors[r], "max_connections (3)") && contains(errors[r], "2 had not arrived (") &&
                  contains(errors[r], " of 3 had)"),
              "rank %d: %s", r, errors[r].c_str());
  }
  cr_assert_lt(took, tt_timeout_ms(10000), "the meeting failed only after %lld ms", static_cast<long long>(took));

  // With room again, the refusal no longer holds: a new meeting of two completes.
  rank1.reset();
  cr_assert(store_test::eventually([&] { return !store.client->check({tutti::store::kRefusedKey}, soon())[0]; }, 5000));
  auto again = store.connect();
  std::vector<tutti::store::Client*> two = {rank0.get(), again.get()};
  std::vector<std::string> after(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        rendezvous::meet(*two[r], "n/", plan_of(store, r, 2), tutti::concat("test:", r), soon(), "tutti_comm_init");
      } catch (const Error& e) {
        after[r] = e.what();
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  for (int r = 0; r < 2; ++r) cr_assert(after[r].empty(), "rank %d: %s", r, after[r].c_str());
}

// Ranks 0 and 1 of 4 wait, reporting every few hundred ms; rank 2 comes after their first
// report, rank 3 never. Their timeouts must name rank 3 alone: the first report's list
// ("2, 3") is not the timeout's.
Test(meeting, a_rank_that_came_after_a_wait_report_is_not_named_at_the_timeout, .timeout = 60) {
  setenv("TUTTI_WAIT_REPORT_MS", "100", 1);
  store_test::Store store;
  std::vector<std::unique_ptr<tutti::store::Client>> clients;
  for (int r = 0; r < 3; ++r) clients.push_back(store.connect());
  const Deadline deadline = Deadline::after_ms(tt_timeout_ms(2000));
  std::vector<std::string> errors(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(tt_timeout_ms(400)));
      try {
        rendezvous::meet(*clients[r], "m/", plan_of(store, r, 4), tutti::concat("test:", r), deadline,
                         "tutti_comm_init");
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  for (int r = 0; r < 3; ++r) {
    cr_assert(contains(errors[r], "timed out") && contains(errors[r], "rank 3 never arrived (3 of 4 came)"),
              "rank %d: %s", r, errors[r].c_str());
  }
}

// In a world of more than 1,024 ranks, a waiting rank's report does not ask the store
// which ranks are missing: rank 0's does, once per report, for everyone.
Test(meeting, in_a_large_world_only_rank_0_reports_whom_it_waits_for, .timeout = 60) {
  setenv("TUTTI_WAIT_REPORT_MS", "100", 1);
  store_test::StderrCapture log;
  store_test::Store store;
  std::vector<std::unique_ptr<tutti::store::Client>> clients;
  for (int r = 0; r < 2; ++r) clients.push_back(store.connect());
  const Deadline deadline = Deadline::after_ms(tt_timeout_ms(700));
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      try {
        rendezvous::meet(*clients[r], "m/", plan_of(store, r, 1100), tutti::concat("test:", r), deadline,
                         "tutti_comm_init");
      } catch (const Error&) {
        // the timeout: 1,098 ranks never come
      }
    });
  }
  for (auto& rank : ranks) rank.join();
  std::string logged = log.text();
  cr_assert(contains(logged, "rank 1 has waited 100 ms at the rendezvous") &&
                contains(logged, "for the last ranks to arrive (rank 0's report names them)"),
            "%s", logged.c_str());
  cr_assert(contains(logged, "rank 0 has waited 100 ms at the rendezvous") && contains(logged, "for ranks 2, 3, 4, ") &&
                contains(logged, " and 1066 more to arrive (2 of 1100 came)"),
            "%s", logged.c_str());
  cr_assert_eq(store.client->add("m/absent/who/report-100/asked", 0, soon()), 1, "%s", logged.c_str());
}
