// The store's server (runtime/store/server.cc) under load: 64 clients, each on a
// connection of its own and a thread of its own, make 100,000 set/get/add calls in all
// against one server on loopback, with the job secret. Nothing is lost: every get sees
// the value its thread set last, every key holds its last value afterwards, and the
// shared counter is exact. bench/store_bench.cc measures the same workload's speed.
#include <criterion/criterion.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/store/client.h"
#include "runtime/store/server.h"
#include "tests/runtime/store/store_test.h"

using store_test::soon;
using store_test::Store;

namespace {

constexpr int kClients = 64;
constexpr int kCalls = 100000;
constexpr int kKeysPerClient = 16;

std::string key_of(int client, int slot) { return "t" + std::to_string(client) + "/k" + std::to_string(slot); }

}  // namespace

// ctest bounds this file at 120 s (tests/CMakeLists.txt); it takes a few seconds.
Test(server_load, sixty_four_clients_lose_nothing, .timeout = 110) {
  Store store({}, "load secret");
  std::vector<std::unique_ptr<tutti::store::Client>> clients;
  for (int c = 0; c < kClients; ++c) clients.push_back(store.connect());

  std::atomic<int> adds{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      tutti::store::Client& client = *clients[c];
      std::string last[kKeysPerClient];
      // Calls c, c + 64, c + 128, ... of the 100,000, in turns of set, get and add.
      for (int i = c, step = 0; i < kCalls; i += kClients, ++step) {
        int slot = step % kKeysPerClient;
        switch (step % 3) {
          case 0:
            last[slot] = std::to_string(i);
            client.set(key_of(c, slot), last[slot], soon());
            break;
          case 1: {
            int set_slot = (step - 1) % kKeysPerClient;
            if (client.get(key_of(c, set_slot), soon()) != last[set_slot]) ++wrong;
            break;
          }
          case 2:
            client.add("counter", 1, soon());
            ++adds;
            break;
        }
      }
      for (int slot = 0; slot < kKeysPerClient; ++slot) {
        if (!last[slot].empty() && client.get(key_of(c, slot), soon()) != last[slot]) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  cr_assert_eq(wrong.load(), 0, "%d gets saw another value than the one set last", wrong.load());
  cr_assert_gt(adds.load(), kCalls / 4);
  cr_assert_eq(store.client->add("counter", 0, soon()), adds.load());
  auto stats = store.server->stats();
  cr_assert_geq(stats.requests, static_cast<uint64_t>(kCalls));
  cr_assert_eq(stats.dropped_connections, 0u);
  cr_assert_eq(stats.connections, static_cast<size_t>(kClients + 1));
}
