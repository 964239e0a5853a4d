// Which ranks a failed step is missing (runtime/rendezvous/meeting.h): read from the
// store once for all the ranks that ask on one occasion, read again on the next, and
// still answered when the first to ask never publishes what it read.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/rendezvous/meeting.h"
#include "tests/runtime/store/store_test.h"

using store_test::soon;
using tutti::Deadline;
using tutti::rendezvous::shared_absent_ranks;

Test(absent_ranks, one_rank_reads_the_keys_and_every_rank_gets_its_list, .timeout = 30) {
  store_test::Store store;
  for (int rank : {0, 2, 5}) store.client->set(tutti::concat("m/who/", rank), "", soon());
  std::vector<std::unique_ptr<tutti::store::Client>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(store.connect());
  std::vector<std::string> lists(4);
  std::vector<std::thread> askers;
  for (int i = 0; i < 4; ++i) {
    askers.emplace_back([&, i] { lists[i] = shared_absent_ranks(*clients[i], "m/", "who", "timeout", 6, soon()); });
  }
  for (auto& asker : askers) asker.join();
  for (const std::string& list : lists) cr_assert_eq(list, "1, 3, 4");
  cr_assert_eq(store.client->get("m/absent/who/timeout", soon()), "1, 3, 4");
  cr_assert_eq(store.client->add("m/absent/who/timeout/asked", 0, soon()), 4);
}

Test(absent_ranks, a_first_asker_that_never_publishes_leaves_the_others_to_read, .timeout = 30) {
  store_test::Store store;
  store.client->set("m/who/1", "", soon());
  store.client->add("m/absent/who/timeout/asked", 1, soon());  // it asked first, then died
  cr_assert_eq(shared_absent_ranks(*store.client, "m/", "who", "timeout", 3, Deadline::after_ms(200)), "0, 2");
}

// A wait report's list, then the timeout's after another rank came: the timeout must
// not name the rank that came in between (it did when one list served every occasion).
Test(absent_ranks, each_occasion_reads_the_keys_again, .timeout = 30) {
  store_test::Store store;
  store.client->set("m/who/0", "", soon());
  cr_assert_eq(shared_absent_ranks(*store.client, "m/", "who", "report-10000", 3, soon()), "1, 2");
  store.client->set("m/who/2", "", soon());
  cr_assert_eq(shared_absent_ranks(*store.client, "m/", "who", "report-10000", 3, soon()), "1, 2");
  cr_assert_eq(shared_absent_ranks(*store.client, "m/", "who", "timeout", 3, soon()), "1");
}
