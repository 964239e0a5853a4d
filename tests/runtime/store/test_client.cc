// The store's client (runtime/store/client.cc) against a real server on 127.0.0.1:
// every call's semantics, its errors and their messages, that every wait is bounded,
// and that a client with the job secret refuses a store that cannot prove it has it.
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/store/auth.h"
#include "runtime/store/bulk_set.h"
#include "runtime/store/client.h"
#include "runtime/store/protocol.h"
#include "runtime/store/server.h"
#include "tests/runtime/store/store_test.h"
#include "tests/support/processes.h"

using tutti::Deadline;
using tutti::Status;
using tutti::loop::Loop;
using tutti::store::Client;
using tutti::store::Server;

namespace {

using store_test::Clock;
using store_test::contains;
using store_test::error_of;
using store_test::ms_since;
using store_test::soon;
using store_test::Store;
namespace protocol = tutti::store::protocol;
namespace auth = tutti::store::auth;

// A fake store on 127.0.0.1 that accepts one connection. As a stranger, it plays the
// handshake of a store with a secret, but proves itself with its own secret, not the
// job's, and counts the requests other than HELLO that reach it: a client must send
// none. As an older release, it takes clients without a secret and answers WAIT as a
// store before kFlagWithValue did (the first key's index, no value), and GET with
// "value of <key>".
class FakeStore {
 public:
  enum class Plays { kStranger, kOlderRelease };
  explicit FakeStore(Plays plays = Plays::kStranger) : plays_(plays) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    cr_assert_eq(listen(listener_, 4), 0);
    socklen_t length = sizeof(address);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeStore() {
    stop_ = true;
    thread_.join();
    close(listener_);
  }
  uint16_t port() const { return port_; }
  int others() const { return others_.load(); }
  int hellos() const { return hellos_.load(); }

 private:
  // Waits for fd to be readable, checking stop_ now and then; false when stopping.
  bool readable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }
  void serve() {
    if (!readable(listener_)) return;
    int fd = accept(listener_, nullptr, nullptr);
    protocol::Decoder decoder(1u << 20);
    std::string client_nonce;
    char buf[4096];
    while (readable(fd)) {
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      decoder.feed(buf, static_cast<size_t>(n));
      while (auto frame = decoder.next()) {
        protocol::Request request = protocol::decode_request(*frame);
        if (request.op != protocol::Op::kHello) {
          ++others_;
          if (plays_ == Plays::kOlderRelease) answer_as_older_release(fd, request);
          continue;
        }
        protocol::Reply reply;
        reply.op = protocol::Op::kHello;
        reply.id = request.id;
        reply.number = protocol::kVersion;
        reply.max_frame_bytes = 1 << 20;
        std::string server_nonce(auth::kNonceBytes, 'n');
        if (plays_ == Plays::kOlderRelease) {
          reply.values = {"older store", ""};
        } else if (hellos_++ == 0) {
          client_nonce = auth::parse_token(request.expected, auth::kNonceBytes).value_or("");
          reply.values = {"fake store", auth::token(server_nonce)};
        } else {
          reply.values = {"fake store", auth::token(auth::proof("the fake's secret", auth::Side::kServer, client_nonce,
                                                                server_nonce))};
        }
        std::string bytes = protocol::encode(reply);
        ssize_t ignored = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        (void)ignored;
      }
    }
    close(fd);
  }

  void answer_as_older_release(int fd, const protocol::Request& request) {
    protocol::Reply reply;
    reply.op = request.op;
    reply.id = request.id;
    if (request.op == protocol::Op::kGet) reply.values = {"value of " + request.keys.at(0)};
    std::string bytes = protocol::encode(reply);
    ssize_t ignored = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    (void)ignored;
  }

  const Plays plays_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> others_{0};
  std::atomic<int> hellos_{0};
  std::thread thread_;
};

}  // namespace

Test(client, set_then_get, .timeout = 20) {
  Store store;
  store.client->set("a", "1", soon());
  cr_assert_eq(store.client->get("a", soon()), "1");
  std::string binary("\0\xff\n", 3);
  store.client->set("b", binary, soon());
  cr_assert_eq(store.client->get("b", soon()), binary);
  store.client->set("a", "2", soon());
  cr_assert_eq(store.client->get("a", soon()), "2");
  std::string big(1 << 20, 'x');
  store.client->set("big", big, soon());
  cr_assert_eq(store.client->get("big", soon()), big);
  store.client->set("empty", "", soon());
  cr_assert_eq(store.client->get("empty", soon()), "");
  cr_assert_eq(store.client->address(), store.address());
}

// What a set_async's done was told.
struct Outcome {
  std::promise<std::pair<Status, std::string>> told;
  tutti::store::Client::Done done() {
    return [this](Status status, const std::string& message, const std::string&) { told.set_value({status, message}); };
  }
  std::pair<Status, std::string> get() {
    auto future = told.get_future();
    cr_assert(future.wait_for(std::chrono::seconds(10)) == std::future_status::ready, "done was not called");
    return future.get();
  }
};

Test(client, set_async_is_in_place_for_the_next_call_and_reports_its_outcome, .timeout = 20) {
  tutti::store::ServerLimits limits;
  limits.max_value_bytes = 64;
  Store store(limits);
  Outcome stored;
  store.client->set_async("card", "address", stored.done());
  // Nothing waited for it, yet the connection's order puts it before this GET.
  cr_assert_eq(store.client->get("card", soon()), "address");
  auto [status, message] = stored.get();
  cr_assert(status == Status::kOk, "%s", message.c_str());

  Outcome refused;
  store.client->set_async("big", std::string(100, 'x'), refused.done());
  auto [refused_status, why] = refused.get();
  cr_assert(refused_status == Status::kInvalidArgument && contains(why, "store set \"big\""), "%s", why.c_str());
  cr_assert_not(store.client->check({"big"}, soon())[0]);
}

Test(client, get_waits_until_another_thread_sets, .timeout = 20) {
  Store store;
  auto other = store.connect();
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    other->set("late", "here", soon());
  });
  auto start = Clock::now();
  cr_assert_eq(store.client->get("late", soon()), "here");
  cr_assert_geq(ms_since(start), 150);
  setter.join();
}

Test(client, get_times_out_with_the_key_in_the_message, .timeout = 20) {
  Store store;
  auto start = Clock::now();
  auto e = error_of([&] { store.client->get("rdzv/done", Deadline::after_ms(300)); });
  int64_t took = ms_since(start);
  cr_assert(e.status() == Status::kTimeout);
  std::string want = "store get \"rdzv/done\" timed out after ";
  cr_assert(contains(e.what(), want) && contains(e.what(), " ms on " + store.address()), "%s", e.what());
  cr_assert(took >= 250 && took < tt_timeout_ms(3000), "took %lld ms", static_cast<long long>(took));
  // The connection is still good afterwards.
  store.client->set("rdzv/done", "1", soon());
  cr_assert_eq(store.client->get("rdzv/done", soon()), "1");
  // A deadline already past answers at once.
  start = Clock::now();
  cr_assert(error_of([&] { store.client->get("never", Deadline::after_ms(0)); }).status() == Status::kTimeout);
  cr_assert_lt(ms_since(start), tt_timeout_ms(2000));
}

Test(client, add_from_eight_threads_is_exact, .timeout = 60) {
  Store store;
  std::vector<std::unique_ptr<Client>> clients;
  for (int t = 0; t < 4; ++t) clients.push_back(store.connect());
  std::vector<std::thread> threads;
  std::atomic<int64_t> largest{0};
  for (int t = 0; t < 8; ++t) {
    // Two threads share each client, so replies must find their callers by id.
    Client* client = clients[t % 4].get();
    threads.emplace_back([&, client] {
      for (int i = 0; i < 1000; ++i) {
        int64_t v = client->add("counter", 1, soon());
        int64_t seen = largest.load();
        while (v > seen && !largest.compare_exchange_weak(seen, v)) {
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  cr_assert_eq(store.client->add("counter", 0, soon()), 8000);
  cr_assert_eq(largest.load(), 8000);
  cr_assert_eq(store.client->get("counter", soon()), "8000");
  cr_assert_eq(store.client->add("counter", -8001, soon()), -1);
  store.client->set("text", "abc", soon());
  auto e = error_of([&] { store.client->add("text", 1, soon()); });
  cr_assert(e.status() == Status::kInvalidArgument && contains(e.what(), "not a decimal integer"), "%s", e.what());
}

Test(client, compare_set, .timeout = 20) {
  Store store;
  // "" expects the key to be absent.
  cr_assert_eq(store.client->compare_set("k", "", "first", soon()), "first");
  cr_assert_eq(store.client->get("k", soon()), "first");
  // A wrong expectation leaves the value and returns it.
  cr_assert_eq(store.client->compare_set("k", "", "second", soon()), "first");
  cr_assert_eq(store.client->compare_set("k", "nope", "second", soon()), "first");
  cr_assert_eq(store.client->compare_set("k", "first", "second", soon()), "second");
  cr_assert_eq(store.client->get("k", soon()), "second");
  // Absent key, non-empty expectation: nothing set, nothing held.
  cr_assert_eq(store.client->compare_set("absent", "x", "y", soon()), "");
  cr_assert(!store.client->check({"absent"}, soon())[0]);
}

Test(client, compare_set_wakes_a_waiting_get, .timeout = 20) {
  Store store;
  auto other = store.connect();
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    other->compare_set("cas", "", "won", soon());
  });
  cr_assert_eq(store.client->get("cas", soon()), "won");
  setter.join();
}

Test(client, wait_all_and_wait_any, .timeout = 20) {
  Store store;
  auto other = store.connect();
  store.client->wait_all({}, soon());
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    other->set("b", "1", soon());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    other->set("a", "1", soon());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    other->set("c", "1", soon());
  });
  cr_assert_eq(store.client->wait_any({"x", "b", "y"}, soon()), 1u);
  store.client->wait_all({"a", "b", "c", "a"}, soon());
  setter.join();
  cr_assert_eq(store.client->wait_any({"nope", "c"}, soon()), 1u);
  auto e = error_of([&] { store.client->wait_all({"a", "zz"}, Deadline::after_ms(100)); });
  cr_assert(e.status() == Status::kTimeout);
  cr_assert(contains(e.what(), "store wait_all \"a\", \"zz\" timed out after"), "%s", e.what());
  e = error_of([&] { store.client->wait_any({"p", "q", "r", "s", "t"}, Deadline::after_ms(50)); });
  cr_assert(contains(e.what(), "store wait_any \"p\", \"q\", \"r\" and 2 more timed out"), "%s", e.what());
  cr_assert(error_of([&] { store.client->wait_any({}, soon()); }).status() == Status::kInvalidArgument);
}

Test(client, wait_all_survives_a_key_deleted_in_between, .timeout = 20) {
  Store store;
  auto other = store.connect();
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    other->set("a", "1", soon());
    other->remove("a", soon());
    other->set("b", "1", soon());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    other->set("a", "2", soon());
  });
  cr_assert_eq(store.client->multi_get({"a", "b"}, soon()), (std::vector<std::string>{"2", "1"}));
  setter.join();
}

Test(client, check_never_waits, .timeout = 20) {
  Store store;
  store.client->set("yes", "1", soon());
  auto start = Clock::now();
  cr_assert_eq(store.client->check({"yes", "no", "yes"}, soon()), (std::vector<bool>{true, false, true}));
  cr_assert(store.client->check({}, soon()).empty());
  cr_assert_lt(ms_since(start), tt_timeout_ms(2000));
}

Test(client, multi_get_waits_for_every_key, .timeout = 20) {
  Store store;
  auto other = store.connect();
  store.client->set("m1", "one", soon());
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    other->set("m2", "two", soon());
  });
  auto values = store.client->multi_get({"m1", "m2", "m1"}, soon());
  cr_assert_eq(values, (std::vector<std::string>{"one", "two", "one"}));
  setter.join();
  cr_assert(store.client->multi_get({}, soon()).empty());
  cr_assert(error_of([&] {
              store.client->multi_get({"m1", "m3"}, Deadline::after_ms(50));
            }).status() == Status::kTimeout);
}

Test(client, multi_set_sets_every_key_in_one_request, .timeout = 20) {
  Store store;
  auto waiter = store.connect();
  std::vector<std::string> values;
  std::thread getter([&] { values = waiter->multi_get({"s1", "s2", "s3"}, soon()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uint64_t before = store.server->stats().requests;
  store.client->multi_set({"s1", "s2", "s3"}, {"one", "two", std::string(1000, 'x')}, soon());
  // One request for the three keys (and perhaps the other thread's MULTI_GET, if it came
  // after the count was read), not three.
  cr_assert_leq(store.server->stats().requests - before, 2u);
  getter.join();
  cr_assert_eq(values, (std::vector<std::string>{"one", "two", std::string(1000, 'x')}));
  store.client->multi_set({}, {}, soon());
  auto e = error_of([&] { store.client->multi_set({"a", "b"}, {"1"}, soon()); });
  cr_assert(e.status() == Status::kInvalidArgument && contains(e.what(), "2 keys but 1 values"), "%s", e.what());
}

Test(client, set_each_sets_every_key_in_slices, .timeout = 30) {
  Store store;
  const size_t count = 2 * tutti::store::kKeysPerSet + 100;
  std::vector<std::string> keys, values;
  for (size_t i = 0; i < count; ++i) {
    keys.push_back("seat/" + std::to_string(i));
    values.push_back(std::to_string(i * 7));
  }
  uint64_t before = store.server->stats().requests;
  tutti::store::set_each(*store.client, keys, values, soon());
  cr_assert_eq(store.server->stats().requests - before, 3u, "three MULTI_SETs for two slices and a bit");
  cr_assert_eq(store.client->multi_get(keys, soon()), values);
  auto e = error_of([&] { tutti::store::set_each(*store.client, keys, {"1"}, soon()); });
  cr_assert(e.status() == Status::kInvalidArgument && contains(e.what(), "give one per key"), "%s", e.what());
}

Test(client, get_any_returns_the_first_key_present_and_its_value, .timeout = 20) {
  Store store;
  auto other = store.connect();
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    other->set("g/lost", "rank 3 ended", soon());
  });
  auto [index, value] = store.client->get_any({"g/place", "g/abort", "g/lost"}, soon());
  setter.join();
  cr_assert_eq(index, 2u);
  cr_assert_eq(value, "rank 3 ended");
  auto e = error_of([&] { store.client->get_any({"g/none"}, Deadline::after_ms(50)); });
  cr_assert(e.status() == Status::kTimeout && contains(e.what(), "store get_any \"g/none\" timed out"), "%s", e.what());
}

Test(client, get_any_on_an_older_store_reads_the_value_itself, .timeout = 20) {
  FakeStore older(FakeStore::Plays::kOlderRelease);
  auto loop = Loop::create();
  auto client = Client::connect(loop, "127.0.0.1", older.port(), soon());
  auto [index, value] = client->get_any({"first", "second"}, soon());
  cr_assert_eq(index, 0u);
  cr_assert_eq(value, "value of first");
  cr_assert_eq(older.others(), 2, "a WAIT, then a GET of the key it named");
}

// The meeting's shape: requests sent together, one answered while another still waits
// at the store, each failure thrown by the wait for its own request.
Test(client, a_pipeline_answers_each_request_on_its_own, .timeout = 20) {
  Store store;
  auto other = store.connect();
  uint64_t before = store.server->stats().requests;
  auto pipeline = store.client->pipeline(soon());
  size_t count = pipeline->add("p/count", 5);
  size_t kept = pipeline->compare_set("p/who", "", "me");
  size_t place = pipeline->get_any({"p/place", "p/abort"});
  pipeline->set("p/mine", "1");
  size_t all = pipeline->multi_get({"p/mine", "p/who"});
  pipeline->send();
  pipeline->wait(count);
  cr_assert_eq(pipeline->number(count), 5);
  pipeline->wait(kept);
  cr_assert_eq(pipeline->value(kept), "me");
  pipeline->wait(all);
  cr_assert_eq(pipeline->values(all), (std::vector<std::string>{"1", "me"}));
  // The GET_ANY still waits; a SET from another connection ends it.
  other->set("p/place", "0 4 1", soon());
  pipeline->wait(place);
  cr_assert_eq(pipeline->number(place), 0);
  cr_assert_eq(pipeline->value(place), "0 4 1");
  cr_assert_eq(store.server->stats().requests - before, 6u, "five requests, and the other connection's SET");

  // A failure is thrown by its own wait; the requests around it still ran.
  auto failing = store.client->pipeline(soon());
  size_t bad = failing->add("p/who", 1);  // holds "me", not a number
  size_t good = failing->add("p/count", 1);
  failing->send();
  failing->wait(good);
  cr_assert_eq(failing->number(good), 6);
  auto e = error_of([&] { failing->wait(bad); });
  cr_assert(e.status() == Status::kInvalidArgument && contains(e.what(), "store add \"p/who\""), "%s", e.what());
  auto first = store.client->pipeline(soon());
  first->set("p/x", "1");
  first->add("p/who", 1);
  first->add("p/y", 1);
  cr_assert(error_of([&] { first->wait_all(); }).status() == Status::kInvalidArgument);
  cr_assert_eq(store.client->get("p/y", soon()), "1");

  // Waiting ones wait until the pipeline's deadline, and say so.
  auto late = store.client->pipeline(Deadline::after_ms(100));
  size_t never = late->get_any({"p/never"});
  e = error_of([&] { late->wait(never); });
  cr_assert(e.status() == Status::kTimeout && contains(e.what(), "store get_any \"p/never\" timed out"), "%s",
            e.what());
  // A pipeline dropped with a request still parked leaves the client usable.
  {
    auto dropped = store.client->pipeline(soon());
    dropped->get_any({"p/dropped"});
    dropped->send();
  }
  cr_assert_eq(store.client->get("p/x", soon()), "1");
}

Test(client, a_pipeline_of_a_failed_client_fails_each_request, .timeout = 20) {
  Store store;
  store.client->shutdown(Status::kAborted, "closed by the test");
  auto pipeline = store.client->pipeline(soon());
  size_t a = pipeline->set("k", "v");
  size_t b = pipeline->get_any({"k"});
  for (size_t i : {a, b}) {
    auto e = error_of([&] { pipeline->wait(i); });
    cr_assert(e.status() == Status::kAborted && contains(e.what(), "closed by the test"), "%s", e.what());
  }
}

Test(client, remove, .timeout = 20) {
  Store store;
  store.client->set("r", "1", soon());
  cr_assert(store.client->remove("r", soon()));
  cr_assert(!store.client->remove("r", soon()));
  cr_assert(!store.client->check({"r"}, soon())[0]);
  cr_assert_eq(store.server->stats().keys, 0u);
  cr_assert_eq(store.server->stats().bytes, 0u);
}

Test(client, connect_to_nobody_fails_within_the_deadline, .timeout = 20) {
  auto loop = Loop::create();
  int port = tt_free_port();
  auto start = Clock::now();
  auto e = error_of([&] { Client::connect(loop, "127.0.0.1", static_cast<uint16_t>(port), Deadline::after_ms(400)); });
  int64_t took = ms_since(start);
  cr_assert(e.status() == Status::kTransport);
  std::string want = "rendezvous store at 127.0.0.1:" + std::to_string(port) + ": connection refused after ";
  cr_assert(contains(e.what(), want), "%s", e.what());
  cr_assert(contains(e.what(), " tries over ") &&
                contains(e.what(), "; is rank 0 (or tutti launch) running, and is the address right?"),
            "%s", e.what());
  cr_assert(took >= 350 && took < tt_timeout_ms(2000), "took %lld ms", static_cast<long long>(took));
}

Test(client, connect_retries_until_the_server_is_up, .timeout = 20) {
  auto loop = Loop::create();
  auto server_loop = Loop::create();
  int port = tt_free_port();
  std::unique_ptr<Server> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    server = Server::start(server_loop, "127.0.0.1", static_cast<uint16_t>(port));
  });
  auto client = Client::connect(loop, "127.0.0.1", static_cast<uint16_t>(port), soon());
  starter.join();
  client->set("up", "1", soon());
  cr_assert_eq(client->get("up", soon()), "1");
}

Test(client, unresolvable_host_is_a_transport_error, .timeout = 30) {
  auto loop = Loop::create();
  auto e = error_of([&] { Client::connect(loop, "no-such-host.invalid", 1, soon()); });
  cr_assert(e.status() == Status::kTransport);
  cr_assert(contains(e.what(), "no-such-host.invalid:1"), "%s", e.what());
}

Test(client, shutdown_fails_a_waiting_get_at_once, .timeout = 20) {
  Store store;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    store.client->shutdown(Status::kAborted, "rank 3 failed; aborting");
  });
  auto start = Clock::now();
  auto e = error_of([&] { store.client->get("never", Deadline::after_ms(30000)); });
  cr_assert(e.status() == Status::kAborted);
  cr_assert_str_eq(e.what(), "rank 3 failed; aborting");
  cr_assert_lt(ms_since(start), tt_timeout_ms(2000));
  stopper.join();
  // Later calls fail the same way, at once.
  e = error_of([&] { store.client->set("x", "1", soon()); });
  cr_assert(e.status() == Status::kAborted);
  store.client->shutdown(Status::kTimeout, "second shutdown is harmless");
}

Test(client, many_threads_share_one_client, .timeout = 30) {
  Store store;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
        store.client->set(key, key, soon());
        if (store.client->get(key, soon()) == key) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  cr_assert_eq(ok.load(), 1600);
}

Test(client, destroying_a_client_from_another_thread_is_bounded, .timeout = 20) {
  Store store;
  auto other = store.connect();
  std::thread waiter([&] {
    auto e = error_of([&] { other->get("never", Deadline::after_ms(30000)); });
    cr_assert(e.status() == Status::kAborted, "%s", e.what());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  other->shutdown(Status::kAborted, "closing");
  waiter.join();
  auto start = Clock::now();
  other.reset();
  cr_assert_lt(ms_since(start), tt_timeout_ms(2000));
  // The server dropped the closed connection's waiter; setting the key later is harmless.
  store.client->set("never", "now", soon());
  cr_assert_eq(store.client->get("never", soon()), "now");
}

Test(client, a_store_that_cannot_prove_the_secret_is_refused, .timeout = 20) {
  FakeStore fake;
  auto loop = Loop::create();
  auto e = error_of([&] { Client::connect(loop, "127.0.0.1", fake.port(), soon(), "the job's secret"); });
  cr_assert(e.status() == Status::kDenied, "%s", e.what());
  std::string address = "rendezvous store at 127.0.0.1:" + std::to_string(fake.port());
  cr_assert(contains(e.what(), address + " did not prove it knows the job secret: it is not this job's store"), "%s",
            e.what());
  cr_assert_eq(fake.hellos(), 2);
  cr_assert_eq(fake.others(), 0, "the client sent a request to a store it had not authenticated");
}

Test(client, a_client_with_a_secret_refuses_a_store_without_one, .timeout = 20) {
  Store store;  // no secret
  auto e = error_of([&] { store.connect_with("the job's secret"); });
  cr_assert(e.status() == Status::kDenied, "%s", e.what());
  cr_assert(contains(e.what(), "rendezvous store at " + store.address() + " does not ask for the job secret"), "%s",
            e.what());
  cr_assert(contains(e.what(), "or unset TUTTI_SECRET on every rank"), "%s", e.what());
}

Test(client, secrets_that_differ_are_denied_either_way, .timeout = 20) {
  Store store({}, "one");
  for (const char* other : {"two", "on", "one "}) {
    auto e = error_of([&] { store.connect_with(other); });
    cr_assert(e.status() == Status::kDenied, "%s: %s", other, e.what());
  }
  cr_assert_eq(store.connect_with("one")->check({"k"}, soon()).size(), 1u);
}
