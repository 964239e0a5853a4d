// The UCX transport (runtime/transport/ucx/) between ranks on threads of one process,
// meeting at an in-process store: every pair including self, empty messages, tag
// spaces and values, order, a rendezvous-sized message, truncation, cancelled and
// abandoned requests, sleeping and waking, a connect that times out, a peer process
// that dies, one whose last message the receiver looks for only after it ended, and
// same-host endpoints that read large messages from their peer's memory, and a
// network device that vanished between the context and the worker.
// Two tests print latency and bandwidth, for information only.
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <ucs/config/global_opts.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/loop/loop.h"
#include "runtime/store/client.h"
#include "runtime/transport/transport.h"
#include "runtime/transport/ucx/connect.h"
#include "runtime/transport/ucx/context.h"
#include "tests/runtime/store/store_test.h"
#include "tests/support/processes.h"

using tutti::Deadline;
using tutti::Status;
using tutti::store::Client;
using tutti::transport::Request;
using tutti::transport::Tag;
using tutti::transport::TagSpace;
using tutti::transport::Transport;

namespace {

using store_test::Clock;
using store_test::contains;
using store_test::error_of;
using store_test::ms_since;
using store_test::soon;
using store_test::Store;

const char* const kWhere = "comm \"test\"";

Tag user(uint32_t value) { return Tag{.value = value, .space = TagSpace::kUser}; }
Tag collective(uint32_t value) { return Tag{.value = value, .space = TagSpace::kCollective}; }

// n ranks, connected on n threads (connect is collective), one store client each.
struct World {
  explicit World(int n) {
    for (int r = 0; r < n; ++r) clients.push_back(store.connect());
    ranks.resize(n);
    std::vector<std::string> errors(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          ranks[r] = tutti::transport::ucx::connect(*clients[r], "w/", r, n, kWhere);
        } catch (const tutti::Error& e) {
          errors[r] = e.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    for (int r = 0; r < n; ++r) cr_assert(errors[r].empty(), "rank %d: %s", r, errors[r].c_str());
  }
  Transport& operator[](int rank) { return *ranks[rank]; }

  Store store;
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Transport>> ranks;
};

struct Posted {
  Transport* transport;
  Request* request;
};

// Drives every rank of the world from this thread until all of posted are done.
void finish(World& world, const std::vector<Posted>& posted, int timeout_ms = 10000) {
  Deadline deadline = Deadline::after_ms(tt_timeout_ms(timeout_ms));
  for (;;) {
    for (auto& rank : world.ranks) rank->progress();
    bool all = true;
    for (const Posted& p : posted) all = p.transport->done(p.request) && all;
    if (all) return;
    cr_assert(!deadline.expired(), "requests not done after %d ms", timeout_ms);
  }
}

void release_all(const std::vector<Posted>& posted) {
  for (const Posted& p : posted) p.transport->release(p.request);
}

// Drives one transport alone (its peers are driven by other threads).
void finish_one(Transport& transport, Request* request, int timeout_ms = 10000) {
  Deadline deadline = Deadline::after_ms(tt_timeout_ms(timeout_ms));
  while (!transport.done(request)) {
    cr_assert(!deadline.expired(), "request not done after %d ms", timeout_ms);
    transport.progress();
  }
}

// Forks rank 1 of a world of 2, before the caller starts any thread or touches UCX, so
// that the child starts clean: it reads the store's port from port_fd, connects, runs
// body with its transport and exits 0 (2: no port, 3: something threw).
pid_t fork_rank_one(int port_fd, const std::function<void(Transport&)>& body) {
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child != 0) return child;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  uint16_t port = 0;
  if (read(port_fd, &port, sizeof(port)) != sizeof(port)) _exit(2);
  try {
    auto loop = tutti::loop::Loop::create();
    auto client = Client::connect(loop, "127.0.0.1", port, soon());
    auto transport = tutti::transport::ucx::connect(*client, "w/", 1, 2, kWhere);
    body(*transport);
    _exit(0);
  } catch (...) {
    _exit(3);
  }
}

double thread_cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> data(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 1664525u + 1013904223u;
    data[i] = static_cast<uint8_t>(x >> 24);
  }
  return data;
}

}  // namespace

Test(ucx, every_pair_including_self, .timeout = 60) {
  for (int n : {2, 3, 4}) {
    World world(n);
    std::vector<std::string> sent(n * n), received(n * n);
    std::vector<Posted> posted;
    // One tag for every pair: only the source rank in the UCX tag keeps them apart.
    for (int to = 0; to < n; ++to) {
      for (int from = 0; from < n; ++from) {
        received[from * n + to].assign(64, '\0');
        posted.push_back({&world[to], world[to].post_recv(from, collective(7), received[from * n + to].data(), 64)});
      }
    }
    for (int from = 0; from < n; ++from) {
      for (int to = 0; to < n; ++to) {
        sent[from * n + to] = "from " + std::to_string(from) + " to " + std::to_string(to);
        const std::string& s = sent[from * n + to];
        posted.push_back({&world[from], world[from].post_send(to, collective(7), s.data(), s.size())});
      }
    }
    finish(world, posted);
    for (int to = 0; to < n; ++to) {
      for (int from = 0; from < n; ++from) {
        const Posted& p = posted[to * n + from];
        size_t got = p.transport->received_bytes(p.request);
        cr_assert_eq(got, sent[from * n + to].size());
        cr_assert_eq(received[from * n + to].substr(0, got), sent[from * n + to]);
      }
    }
    release_all(posted);
    cr_assert(contains(world[0].describe(), "ucx ("), "%s", world[0].describe());
    std::fprintf(stderr, "[ucx] %d ranks: rank 0 describes itself as \"%s\"\n", n, world[0].describe());
  }
}

Test(ucx, a_small_send_to_a_connected_peer_completes_as_it_is_posted, .timeout = 30) {
  World world(2);
  // The first send finds no endpoint yet (the peer's card is being read): a request.
  const std::string first = "connect";
  char landing[16];
  Request* connecting = world[0].post_send(1, user(1), first.data(), first.size());
  cr_assert_not_null(connecting, "a send before the endpoint exists must be a request");
  Request* received = world[1].post_recv(0, user(1), landing, sizeof(landing));
  finish(world, {{&world[0], connecting}, {&world[1], received}});
  release_all({{&world[0], connecting}, {&world[1], received}});

  // Connected: small messages leave at once, as a null request (transport.h), and still
  // arrive whole and in order under one tag: those UCX's short path takes, and those it
  // sends whole inside the call (over shared memory, past about 100 bytes), sizes
  // repeated and mixed after the short path has refused one (what the endpoint learns
  // from a refusal must change neither the result nor the order).
  const std::vector<std::string> small = {"a",
                                          std::string(512, 'd'),
                                          "bb",
                                          std::string(4096, 'e'),
                                          std::string(64, 'c'),
                                          std::string(512, 'f'),
                                          std::string(300, 'g')};
  for (const std::string& text : small) {
    Request* send = world[0].post_send(1, user(2), text.data(), text.size());
    cr_assert_null(send, "a %zu-byte send to a connected peer should complete as it is posted", text.size());
    cr_assert(world[0].done(send));
    size_t ignored = 0;
    cr_assert(world[0].finish(send, &ignored));
    world[0].release(send);
  }
  std::vector<std::string> buffers(small.size(), std::string(4096, '\0'));
  std::vector<Posted> posted;
  for (std::string& buffer : buffers) {
    posted.push_back({&world[1], world[1].post_recv(0, user(2), buffer.data(), buffer.size())});
  }
  finish(world, posted);
  for (size_t i = 0; i < small.size(); ++i) {
    size_t got = 0;
    cr_assert(world[1].finish(posted[i].request, &got));
    cr_assert_eq(buffers[i].substr(0, got), small[i], "message %zu out of order or damaged", i);
  }

  // A large one cannot leave at once: a request, finished like any other.
  const std::vector<uint8_t> large = pattern(1 << 20, 7);
  std::vector<uint8_t> into(large.size());
  Request* send = world[0].post_send(1, user(3), large.data(), large.size());
  cr_assert_not_null(send, "a 1 MiB send cannot complete as it is posted");
  Request* recv = world[1].post_recv(0, user(3), into.data(), into.size());
  finish(world, {{&world[0], send}, {&world[1], recv}});
  size_t got = 0;
  cr_assert(world[1].finish(recv, &got));
  cr_assert(world[0].finish(send, nullptr));
  cr_assert_eq(got, large.size());
  cr_assert(into == large);
}

Test(ucx, zero_byte_messages, .timeout = 30) {
  World world(2);
  char sink[4] = {'x', 'x', 'x', 'x'};
  std::vector<Posted> posted = {
      {&world[1], world[1].post_recv(0, user(1), nullptr, 0)},
      {&world[1], world[1].post_recv(0, user(2), sink, sizeof(sink))},
      {&world[0], world[0].post_recv(0, user(3), nullptr, 0)},
      {&world[0], world[0].post_send(1, user(1), nullptr, 0)},
      {&world[0], world[0].post_send(1, user(2), sink, 0)},
      {&world[0], world[0].post_send(0, user(3), nullptr, 0)},
  };
  finish(world, posted);
  for (int i = 0; i < 3; ++i) cr_assert_eq(posted[i].transport->received_bytes(posted[i].request), 0u);
  cr_assert_eq(std::string(sink, 4), "xxxx");
  release_all(posted);
}

Test(ucx, tag_spaces_and_values_never_match_each_other, .timeout = 30) {
  World world(2);
  struct Case {
    Tag tag;
    std::string text;
  };
  std::vector<Case> cases = {{user(5), "user 5"},
                             {collective(5), "collective 5"},
                             {user(6), "user 6"},
                             {user(0xffffffffu), "user max"},
                             {collective(0xffffffffu), "collective max"},
                             {collective(0), "collective 0"}};
  for (const Case& c : cases) {
    Request* send = world[0].post_send(1, c.tag, c.text.data(), c.text.size());
    finish(world, {{&world[0], send}});
    world[0].release(send);
  }
  // Received in the opposite order: each must pick its own message from those waiting.
  std::vector<std::string> buffers(cases.size(), std::string(32, '\0'));
  std::vector<Posted> posted;
  for (size_t i = cases.size(); i-- > 0;) {
    posted.push_back({&world[1], world[1].post_recv(0, cases[i].tag, buffers[i].data(), 32)});
  }
  finish(world, posted);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Posted& p = posted[cases.size() - 1 - i];
    size_t got = p.transport->received_bytes(p.request);
    cr_assert_eq(buffers[i].substr(0, got), cases[i].text, "case %zu got \"%s\" (%zu bytes)", i, buffers[i].c_str(),
                 got);
  }
  release_all(posted);

  // A receive in the other space, or for another value, is left waiting.
  char buffer[16];
  Request* other_space = world[1].post_recv(0, user(9), buffer, sizeof(buffer));
  Request* other_value = world[1].post_recv(0, collective(10), buffer, sizeof(buffer));
  Request* send = world[0].post_send(1, collective(9), "c9", 2);
  auto start = Clock::now();
  while (ms_since(start) < 200) {
    world[0].progress();
    world[1].progress();
  }
  cr_assert(!world[1].done(other_space) && !world[1].done(other_value));
  char right[16];
  Request* matching = world[1].post_recv(0, collective(9), right, sizeof(right));
  finish(world, {{&world[0], send}, {&world[1], matching}});
  cr_assert_eq(std::string(right, world[1].received_bytes(matching)), "c9");
  for (Request* r : {other_space, other_value, matching}) world[1].release(r);
  world[0].release(send);
}

Test(ucx, order_is_kept_for_one_peer_and_tag_across_protocols, .timeout = 60) {
  World world(2);
  constexpr int kMessages = 64;
  // Small (eager) and 256 KiB (rendezvous) messages alternate under one tag; the
  // first half of the receives is posted before the sends, the second half after.
  auto size_of = [](int i) -> size_t { return i % 2 == 0 ? 8 : 256 * 1024; };
  std::vector<std::vector<uint8_t>> sent, received;
  for (int i = 0; i < kMessages; ++i) {
    sent.push_back(pattern(size_of(i), i));
    received.emplace_back(256 * 1024);
  }
  std::vector<Posted> posted;
  for (int i = 0; i < kMessages / 2; ++i) {
    posted.push_back({&world[1], world[1].post_recv(0, user(3), received[i].data(), received[i].size())});
  }
  for (int i = 0; i < kMessages; ++i) {
    posted.push_back({&world[0], world[0].post_send(1, user(3), sent[i].data(), sent[i].size())});
  }
  for (int i = kMessages / 2; i < kMessages; ++i) {
    posted.push_back({&world[1], world[1].post_recv(0, user(3), received[i].data(), received[i].size())});
  }
  finish(world, posted, 30000);
  for (int i = 0; i < kMessages; ++i) {
    const Posted& p = i < kMessages / 2 ? posted[i] : posted[kMessages + i];
    cr_assert_eq(p.transport->received_bytes(p.request), size_of(i), "message %d", i);
    cr_assert(std::memcmp(received[i].data(), sent[i].data(), size_of(i)) == 0, "message %d", i);
  }
  release_all(posted);
}

Test(ucx, a_64_mib_message_arrives_intact, .timeout = 60) {
  World world(2);
  std::vector<uint8_t> sent = pattern(64u << 20, 64);
  std::vector<uint8_t> received(sent.size());
  auto start = Clock::now();
  std::vector<Posted> posted = {{&world[1], world[1].post_recv(0, collective(1), received.data(), received.size())},
                                {&world[0], world[0].post_send(1, collective(1), sent.data(), sent.size())}};
  finish(world, posted, 30000);
  int64_t took = ms_since(start);
  cr_assert_eq(world[1].received_bytes(posted[0].request), sent.size());
  cr_assert(received == sent);
  release_all(posted);
  std::fprintf(stderr, "[ucx] 64 MiB in %lld ms, one thread driving both ranks (%s)\n", static_cast<long long>(took),
               world[0].describe());
}

Test(ucx, truncation_names_both_sizes, .timeout = 30) {
  World world(2);
  // Eager and rendezvous; the receive posted before the message arrives, and after.
  struct Case {
    size_t bytes;
    bool message_first;
  };
  for (Case c : {Case{1000, false}, Case{1u << 20, false}, Case{1000, true}, Case{1u << 20, true}}) {
    size_t bytes = c.bytes;
    bool message_first = c.message_first;
    std::vector<uint8_t> sent(bytes, 7);
    std::vector<uint8_t> small(100);
    Request* send = nullptr;
    if (message_first) {
      send = world[0].post_send(1, user(4), sent.data(), sent.size());
      for (int i = 0; i < 100; ++i) {
        world[0].progress();
        world[1].progress();
      }
    }
    Request* recv = world[1].post_recv(0, user(4), small.data(), small.size());
    if (!message_first) send = world[0].post_send(1, user(4), sent.data(), sent.size());
    Deadline deadline = Deadline::after_ms(tt_timeout_ms(10000));
    tutti::Error e(Status::kOk, "");
    for (;;) {
      world[0].progress();
      world[1].progress();
      try {
        if (world[1].done(recv)) cr_assert_fail("a %zu-byte message fit a 100-byte buffer", bytes);
      } catch (const tutti::Error& error) {
        e = error;
        break;
      }
      cr_assert(!deadline.expired());
    }
    cr_assert(e.status() == Status::kInvalidArgument, "%s", e.what());
    std::string want = "a message of at least " + std::to_string(bytes) + " bytes from rank 0 (user tag 4)";
    cr_assert(
        contains(e.what(), want) && contains(e.what(), "receive buffer of 100 bytes") && contains(e.what(), kWhere),
        "%s", e.what());
    std::fprintf(stderr, "[ucx] truncation: %s\n", e.what());
    // The send's side is settled either way; both are released cleanly.
    Deadline settle = Deadline::after_ms(tt_timeout_ms(5000));
    bool send_done = false;
    while (!send_done && !settle.expired()) {
      world[0].progress();
      world[1].progress();
      try {
        send_done = world[0].done(send);
      } catch (const tutti::Error&) {
        send_done = true;
      }
    }
    world[1].release(recv);
    world[0].release(send);
  }
}

// A receive matches on the whole tag, Tag::check included; a message whose check
// differs (another call's, from the same rank and step) is still taken, by the
// receive's look for one (so nothing hangs and its sender completes), and the receive
// fails with kMismatch naming both fingerprints; equal checks pass. Eager and
// rendezvous, the receive posted before the message arrives and after.
Test(ucx, a_differing_check_is_a_mismatch_not_a_hang, .timeout = 30) {
  World world(2);
  for (bool message_first : {false, true}) {
    for (size_t bytes : {size_t{8}, size_t{1} << 20}) {
      for (uint16_t their_check : {uint16_t{5}, uint16_t{6}}) {
        std::vector<uint8_t> sent(bytes, 3), got(bytes);
        Request* send = nullptr;
        if (message_first) {
          send = world[0].post_send(1, Tag{.value = 9, .check = their_check, .space = TagSpace::kCollective},
                                    sent.data(), sent.size());
          for (int i = 0; i < 100; ++i) {
            world[0].progress();
            world[1].progress();
          }
        }
        Request* recv =
            world[1].post_recv(0, Tag{.value = 9, .check = 5, .space = TagSpace::kCollective}, got.data(), got.size());
        if (!message_first) {
          send = world[0].post_send(1, Tag{.value = 9, .check = their_check, .space = TagSpace::kCollective},
                                    sent.data(), sent.size());
        }
        Deadline deadline = Deadline::after_ms(tt_timeout_ms(10000));
        Status status = Status::kOk;
        std::string message;
        bool received = false, delivered = false;
        while (!received || !delivered) {
          world[0].progress();
          world[1].progress();
          try {
            if (!received) received = world[1].done(recv);
          } catch (const tutti::Error& error) {
            status = error.status();
            message = error.what();
            received = true;
          }
          if (!delivered) delivered = world[0].done(send);
          cr_assert(!deadline.expired(), "%zu bytes, check %u, message first %d: no completion", bytes, their_check,
                    message_first);
        }
        if (their_check == 5) {
          cr_assert_eq(status, Status::kOk, "%s", message.c_str());
          cr_assert(got == sent);
        } else {
          cr_assert_eq(status, Status::kMismatch, "%zu bytes, message first %d: %s", bytes, message_first,
                       message.c_str());
          cr_assert(contains(message, "rank 0 sent a message for another call (collective tag 9") &&
                        contains(message, "its call fingerprint 6, this rank's 5"),
                    "%s", message.c_str());
        }
        world[1].release(recv);
        world[0].release(send);
      }
    }
  }
}

// A receive's look for another call's message passes over a later message of its own
// call (the same tag, the same check): here a receive whose rendezvous has begun but
// not finished looks while the step's next message waits for its own receive.
Test(ucx, a_receive_in_progress_leaves_its_calls_next_message_alone, .timeout = 30) {
  World world(2);
  const Tag tag{.value = 12, .check = 7, .space = TagSpace::kCollective};
  std::vector<uint8_t> large = pattern(1u << 20, 5), small = pattern(64, 9);
  std::vector<uint8_t> got_large(large.size()), got_small(small.size());
  // A first message, so that the endpoint exists and the two below leave at once.
  char hello = 'h', heard = 0;
  std::vector<Posted> warm_up = {{&world[0], world[0].post_send(1, user(1), &hello, 1)},
                                 {&world[1], world[1].post_recv(0, user(1), &heard, 1)}};
  finish(world, warm_up);
  release_all(warm_up);
  Request* first = world[0].post_send(1, tag, large.data(), large.size());
  Request* second = world[0].post_send(1, tag, small.data(), small.size());
  for (int i = 0; i < 100; ++i) {
    world[0].progress();
    world[1].progress();
  }
  Request* recv_large = world[1].post_recv(0, tag, got_large.data(), got_large.size());
  // Without progress the rendezvous cannot finish: every done() finds the receive
  // incomplete, and the 16th and 32nd look at what else came.
  for (int i = 0; i < 40; ++i) cr_assert(!world[1].done(recv_large), "the rendezvous finished without progress");
  Request* recv_small = world[1].post_recv(0, tag, got_small.data(), got_small.size());
  std::vector<Posted> posted = {
      {&world[0], first}, {&world[0], second}, {&world[1], recv_large}, {&world[1], recv_small}};
  finish(world, posted);
  cr_assert_eq(world[1].received_bytes(recv_large), large.size());
  cr_assert_eq(world[1].received_bytes(recv_small), small.size());
  cr_assert(got_large == large && got_small == small);
  release_all(posted);
}

Test(ucx, released_requests_are_cancelled_and_reused, .timeout = 30) {
  World world(2);
  char buffer[16];
  // A receive nobody sends to: cancelled, and it swallows nothing later.
  Request* lonely = world[0].post_recv(1, user(11), buffer, sizeof(buffer));
  for (int i = 0; i < 100; ++i) world[0].progress();
  cr_assert(!world[0].done(lonely));
  auto start = Clock::now();
  world[0].release(lonely);
  cr_assert_lt(ms_since(start), 50);
  Request* send = world[1].post_send(0, user(11), "late", 4);
  Request* recv = world[0].post_recv(1, user(11), buffer, sizeof(buffer));
  // The pool hands the released request out again.
  cr_assert_eq(recv, lonely);
  finish(world, {{&world[1], send}, {&world[0], recv}});
  cr_assert_eq(std::string(buffer, world[0].received_bytes(recv)), "late");
  world[0].release(recv);
  world[1].release(send);

  // A rendezvous send nobody receives cannot be cancelled in UCX; release() gives it a
  // bounded time, then closes the endpoint so that UCX lets go of the buffer.
  std::vector<uint8_t> big = pattern(4u << 20, 4);
  Request* stuck = world[0].post_send(1, user(12), big.data(), big.size());
  for (int i = 0; i < 100; ++i) world[0].progress();
  start = Clock::now();
  world[0].release(stuck);
  cr_assert_lt(ms_since(start), tt_timeout_ms(1000));
  // The pair still talks afterwards, through a new endpoint.
  Request* again = world[0].post_send(1, user(13), big.data(), big.size());
  std::vector<uint8_t> received(big.size());
  Request* got = world[1].post_recv(0, user(13), received.data(), received.size());
  finish(world, {{&world[0], again}, {&world[1], got}});
  cr_assert(received == big);
  world[0].release(again);
  world[1].release(got);
}

Test(ucx, waiting_sleeps_without_burning_the_core, .timeout = 30) {
  World world(2);
  // Endpoints exist (and UCX's keepalive runs) as in a real communicator.
  char b[8];
  std::vector<Posted> warm = {{&world[1], world[1].post_recv(0, user(1), b, 8)},
                              {&world[0], world[0].post_send(1, user(1), "12345678", 8)}};
  finish(world, warm);
  release_all(warm);
  for (int i = 0; i < 10; ++i) world[0].progress();

  double cpu_before = thread_cpu_ms();
  auto start = Clock::now();
  while (ms_since(start) < 1000) {
    world[0].wait_for_activity(1000);
    world[0].progress();
  }
  double cpu = thread_cpu_ms() - cpu_before;
  std::fprintf(stderr, "[ucx] waited %lld ms using %.1f ms of CPU\n", static_cast<long long>(ms_since(start)), cpu);
  cr_assert_lt(cpu, 50.0);
}

Test(ucx, waiting_ends_on_interrupt_and_on_a_message, .timeout = 30) {
  World world(2);
  // interrupt() from another thread.
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    world[0].interrupt();
  });
  auto start = Clock::now();
  world[0].wait_for_activity(5000);
  int64_t took = ms_since(start);
  interrupter.join();
  cr_assert(took >= 150 && took < 800, "woke after %lld ms", static_cast<long long>(took));

  // An interrupt() before the wait is not lost.
  world[0].progress();
  world[0].interrupt();
  start = Clock::now();
  world[0].wait_for_activity(5000);
  cr_assert_lt(ms_since(start), 100);

  // A message arriving, sent by rank 1 driven on its own thread.
  char buffer[8];
  Request* recv = world[0].post_recv(1, user(2), buffer, sizeof(buffer));
  for (int i = 0; i < 10; ++i) world[0].progress();
  std::thread sender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Request* send = world[1].post_send(0, user(2), "wake up!", 8);
    finish_one(world[1], send);
    world[1].release(send);
  });
  start = Clock::now();
  int waits = 0;
  while (!world[0].done(recv)) {
    world[0].wait_for_activity(5000);
    world[0].progress();
    ++waits;
    cr_assert_lt(ms_since(start), tt_timeout_ms(5000));
  }
  took = ms_since(start);
  sender.join();
  cr_assert(took >= 150 && took < 800, "received after %lld ms", static_cast<long long>(took));
  cr_assert_eq(std::string(buffer, 8), "wake up!");
  world[0].release(recv);
  std::fprintf(stderr, "[ucx] a message woke the waiter after %lld ms (%d waits)\n", static_cast<long long>(took),
               waits);
}

// connect waits for no peer, and a rank reads the address of a peer only when it first
// talks to it: of a world of 8 whose ranks 4 to 7 never come, ranks 0 and 1 talk, to
// each other and to themselves. Sends to a rank that has not published its address
// yet wait, in order, and go out once it has; a waiting send can be released.
Test(ucx, addresses_are_read_when_first_needed, .timeout = 30) {
  Store store;
  std::vector<std::unique_ptr<Client>> clients;
  for (int r = 0; r < 4; ++r) clients.push_back(store.connect());
  std::vector<std::unique_ptr<Transport>> ranks(4);
  auto start = Clock::now();
  for (int r = 0; r < 2; ++r) ranks[r] = tutti::transport::ucx::connect(*clients[r], "w/", r, 8, kWhere);
  cr_assert_lt(ms_since(start), tt_timeout_ms(2000), "connect waited for the other ranks");

  int32_t to_one = 11, to_zero = 22, to_self = 33, got_one = 0, got_zero = 0, got_self = 0;
  std::vector<Posted> posted = {
      {ranks[0].get(), ranks[0]->post_send(1, user(1), &to_one, sizeof to_one)},
      {ranks[1].get(), ranks[1]->post_recv(0, user(1), &got_one, sizeof got_one)},
      {ranks[1].get(), ranks[1]->post_send(0, user(2), &to_zero, sizeof to_zero)},
      {ranks[0].get(), ranks[0]->post_recv(1, user(2), &got_zero, sizeof got_zero)},
      {ranks[0].get(), ranks[0]->post_send(0, user(3), &to_self, sizeof to_self)},
      {ranks[0].get(), ranks[0]->post_recv(0, user(3), &got_self, sizeof got_self)},
  };
  Deadline deadline = Deadline::after_ms(tt_timeout_ms(10000));
  for (bool all = false; !all;) {
    cr_assert(!deadline.expired(), "the messages between ranks 0 and 1 did not arrive");
    for (int r = 0; r < 2; ++r) ranks[r]->progress();
    all = true;
    for (const Posted& p : posted) all = p.transport->done(p.request) && all;
  }
  release_all(posted);
  cr_assert(got_one == 11 && got_zero == 22 && got_self == 33, "%d %d %d", got_one, got_zero, got_self);

  // Rank 2 does not exist yet: rank 0's sends to it wait, neither failing nor blocking.
  std::vector<int32_t> sent = {1, 2, 3}, received(3, 0);
  std::vector<Posted> waiting;
  for (int32_t& value : sent) waiting.push_back({ranks[0].get(), ranks[0]->post_send(2, user(4), &value, 4)});
  int32_t never = 44;
  Request* abandoned = ranks[0]->post_send(3, user(5), &never, sizeof never);
  for (int i = 0; i < 20; ++i) {
    ranks[0]->progress();
    for (const Posted& p : waiting) cr_assert_not(p.transport->done(p.request), "a send to a rank not yet there ended");
    ranks[0]->wait_for_activity(5);
  }
  ranks[0]->release(abandoned);  // a send that never found its peer gives its buffer back
  ranks[2] = tutti::transport::ucx::connect(*clients[2], "w/", 2, 8, kWhere);
  for (int k = 0; k < 3; ++k) waiting.push_back({ranks[2].get(), ranks[2]->post_recv(0, user(4), &received[k], 4)});
  deadline = Deadline::after_ms(tt_timeout_ms(10000));
  for (bool all = false; !all;) {
    cr_assert(!deadline.expired(), "the sends to rank 2 did not go out once it came");
    for (int r : {0, 2}) ranks[r]->progress();
    all = true;
    for (const Posted& p : waiting) all = p.transport->done(p.request) && all;
  }
  release_all(waiting);
  cr_assert(received == sent, "rank 2 got %d %d %d, in the wrong order or not at all", received[0], received[1],
            received[2]);

  // Ranks 4 to 7 never published an address, and nobody needed one.
  std::vector<std::string> absent;
  for (int r = 4; r < 8; ++r) absent.push_back(tutti::concat("w/ucx/", r));
  for (bool present : store.client->check(absent, soon())) cr_assert_not(present);

  auto e = error_of([&] { tutti::transport::ucx::connect(*clients[3], "w/", 3, 3, kWhere); });
  cr_assert(e.status() == Status::kInvalidArgument, "%s", e.what());
}

// The usual peers' cards (rank +- 1, rank ^ 2^k) are read in one request, at the first
// message to one of them: a first recursive doubling then waits for the store once, not
// at each of its log N steps. Any other peer's card is one request of its own.
Test(ucx, the_usual_peers_cards_are_read_together, .timeout = 30) {
  constexpr int kSize = 8;
  World world(kSize);
  std::vector<std::string> cards;
  for (int r = 0; r < kSize; ++r) cards.push_back(tutti::concat("w/ucx/", r));
  cr_assert(tutti::transport::ucx::usual_peers(0, kSize) == (std::set<int>{1, 2, 4, 7}));
  world.store.client->wait_all(cards, soon());  // every card published: nothing still in flight
  uint64_t before = world.store.server->stats().requests;

  // Rank 0 sends to each of its usual peers, which receive from it: rank 0 reads the
  // four cards in one request, and each receiver its own usual peers', 0 among them.
  std::vector<int32_t> values = {1, 2, 4, 7}, got(4, 0);
  std::vector<Posted> posted;
  for (size_t i = 0; i < values.size(); ++i) {
    int peer = values[i];
    posted.push_back({&world[0], world[0].post_send(peer, user(1), &values[i], 4)});
    posted.push_back({&world[peer], world[peer].post_recv(0, user(1), &got[i], 4)});
  }
  finish(world, posted);
  release_all(posted);
  cr_assert(got == values);
  uint64_t after_usual = world.store.server->stats().requests;
  cr_expect_eq(after_usual - before, 5u, "5 lookups (rank 0's and its 4 peers'), got %llu",
               static_cast<unsigned long long>(after_usual - before));

  // Rank 3 is not one of rank 0's usual peers, nor 0 one of 3's: a GET each.
  int32_t to_three = 3, got_three = 0;
  std::vector<Posted> other = {{&world[0], world[0].post_send(3, user(2), &to_three, 4)},
                               {&world[3], world[3].post_recv(0, user(2), &got_three, 4)}};
  finish(world, other);
  release_all(other);
  cr_assert_eq(got_three, 3);
  cr_expect_eq(world.store.server->stats().requests - after_usual, 2u);
}

// Rank 1 is a child process that connects and exits a moment later, without closing
// anything, as a crash would. Rank 0 has a receive from it and a rendezvous send to it
// outstanding: both must fail with kPeerLost, not hang.
Test(ucx, a_peer_process_that_ends_is_lost, .timeout = 30) {
  int port_pipe[2];
  cr_assert_eq(pipe(port_pipe), 0);
  pid_t child =
      fork_rank_one(port_pipe[0], [](Transport&) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  Store store;
  uint16_t port = store.server->port();
  cr_assert_eq(write(port_pipe[1], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  auto transport = tutti::transport::ucx::connect(*store.client, "w/", 0, 2, kWhere);
  char buffer[8];
  std::vector<uint8_t> big(1u << 20);
  Request* recv = transport->post_recv(1, user(1), buffer, sizeof(buffer));
  Request* send = transport->post_send(1, user(2), big.data(), big.size());
  auto start = Clock::now();
  std::string message;
  while (message.empty()) {
    transport->progress();
    try {
      transport->done(recv);
    } catch (const tutti::Error& e) {
      cr_assert(e.status() == Status::kPeerLost, "%s", e.what());
      message = e.what();
    }
    cr_assert_lt(ms_since(start), tt_timeout_ms(5000), "the dead peer was not noticed");
    transport->wait_for_activity(100);
  }
  int64_t took = ms_since(start);
  cr_assert(contains(message, "lost rank 1 of " + std::string(kWhere)), "%s", message.c_str());
  auto e = error_of([&] { transport->done(send); });
  cr_assert(e.status() == Status::kPeerLost, "%s", e.what());
  // Posting to the lost rank fails at once; releasing after failure is safe and bounded.
  Request* late = transport->post_send(1, user(3), buffer, sizeof(buffer));
  cr_assert(error_of([&] { transport->done(late); }).status() == Status::kPeerLost);
  start = Clock::now();
  for (Request* r : {recv, send, late}) transport->release(r);
  transport.reset();
  cr_assert_lt(ms_since(start), tt_timeout_ms(3000));
  int status = 0;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
  std::fprintf(stderr, "[ucx] peer loss seen after %lld ms: %s\n", static_cast<long long>(took), message.c_str());
}

// The thread of this process named `name` (UCX's is "async"), or -1.
pid_t thread_named(const std::string& name) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  pid_t found = -1;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::FILE* comm = std::fopen(tutti::concat("/proc/self/task/", entry->d_name, "/comm").c_str(), "r");
    if (comm == nullptr) continue;
    char text[32] = {};
    if (std::fgets(text, sizeof text, comm) != nullptr && std::string(text) == name + "\n") found = atoi(entry->d_name);
    std::fclose(comm);
  }
  closedir(tasks);
  return found;
}

// Rank 1, a child process, sends rank 0 a small message and ends; only then does rank 0,
// which has sent nothing (its shared-memory transport unused, so that UCX polls it only
// once its async thread has seen an arrival), receive from it, with that thread held
// stopped (ptrace, from a helper process) until 20 ms after the receive is posted, as
// a loaded machine holds it in CI. The loss of rank 1 is seen first; the message must
// still be received, not reported lost.
Test(ucx, a_message_sent_before_the_sender_ended_is_received_late, .timeout = 30) {
  int port_pipe[2], send_pipe[2];
  cr_assert_eq(pipe(port_pipe), 0);
  cr_assert_eq(pipe(send_pipe), 0);
  // Ends as a rank that finishes: its worker goes with it.
  pid_t sender = fork_rank_one(port_pipe[0], [&](Transport& transport) {
    char go = 0;
    if (read(send_pipe[0], &go, 1) != 1) _exit(4);
    Request* send = transport.post_send(0, user(1), "last one", 8);
    finish_one(transport, send);
    transport.release(send);
  });
  Store store;
  uint16_t port = store.server->port();
  cr_assert_eq(write(port_pipe[1], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  auto transport = tutti::transport::ucx::connect(*store.client, "w/", 0, 2, kWhere);
  pid_t async_thread = thread_named("async");
  cr_assert_gt(async_thread, 0, "UCX's async thread (named \"async\") was not found in /proc/self/task");

  int held_pipe[2], release_pipe[2];
  cr_assert_eq(pipe(held_pipe), 0);
  cr_assert_eq(pipe(release_pipe), 0);
  // The holder only makes system calls: safe after fork in a process with threads.
  pid_t holder = fork();
  cr_assert_geq(holder, 0);
  if (holder == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int status = 0;
    char go = 0;
    if (ptrace(PTRACE_SEIZE, async_thread, nullptr, nullptr) != 0) _exit(2);
    if (ptrace(PTRACE_INTERRUPT, async_thread, nullptr, nullptr) != 0) _exit(3);
    if (waitpid(async_thread, &status, __WALL) != async_thread) _exit(4);
    if (write(held_pipe[1], "h", 1) != 1) _exit(5);
    if (read(release_pipe[0], &go, 1) != 1) _exit(6);
    usleep(20000);
    _exit(ptrace(PTRACE_DETACH, async_thread, nullptr, nullptr) == 0 ? 0 : 7);
  }
  char held = 0;
  cr_assert_eq(read(held_pipe[0], &held, 1), 1, "the holder could not stop UCX's async thread (ptrace)");
  cr_assert_eq(write(send_pipe[1], "s", 1), 1);
  int status = 0;
  Deadline deadline = Deadline::after_ms(tt_timeout_ms(10000));
  while (waitpid(sender, &status, WNOHANG) == 0) {
    cr_assert(!deadline.expired(), "rank 1 did not end");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank 1's status %d", status);

  cr_assert_eq(write(release_pipe[1], "g", 1), 1);
  char buffer[8] = {};
  Request* recv = transport->post_recv(1, user(1), buffer, sizeof(buffer));
  std::string lost;
  auto start = Clock::now();
  try {
    finish_one(*transport, recv);
  } catch (const tutti::Error& e) {
    lost = e.what();
  }
  int64_t took = ms_since(start);
  transport->release(recv);
  cr_assert_eq(waitpid(holder, &status, 0), holder);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the holder's status %d", status);
  cr_assert(lost.empty(), "the message rank 1 sent before it ended was lost: %s", lost.c_str());
  cr_assert_eq(std::string(buffer, 8), "last one");
  std::fprintf(stderr, "[ucx] the ended rank's message was received after %lld ms\n", static_cast<long long>(took));
}

Test(ucx, destruction_is_bounded_while_peers_idle, .timeout = 30) {
  auto world = std::make_unique<World>(3);
  // Every pair has endpoints and traffic; then the transports go one by one, each
  // while the others are not progressing.
  std::vector<Posted> posted;
  std::vector<uint64_t> values(9);
  for (int from = 0; from < 3; ++from) {
    for (int to = 0; to < 3; ++to) {
      posted.push_back({&(*world)[to], (*world)[to].post_recv(from, user(1), &values[from * 3 + to], 8)});
      posted.push_back({&(*world)[from], (*world)[from].post_send(to, user(1), &values[from * 3 + to], 8)});
    }
  }
  finish(*world, posted);
  release_all(posted);
  auto start = Clock::now();
  world.reset();
  int64_t took = ms_since(start);
  std::fprintf(stderr, "[ucx] destroying 3 connected ranks took %lld ms\n", static_cast<long long>(took));
  cr_assert_lt(took, tt_timeout_ms(5000));
}

// For information: one-way latency (half a round trip) of 8-byte messages and the
// bandwidth of 16 MiB messages, between two ranks on two threads that only spin.
Test(ucx, latency_and_bandwidth_for_information, .timeout = 120) {
  World world(2);
  constexpr int kRounds = 20000;
  auto ping_pong = [&](int me, int rounds) {
    Transport& t = world[me];
    uint64_t value = 0;
    for (int i = 0; i < rounds; ++i) {
      if (me == 0) {
        Request* s = t.post_send(1, user(1), &value, 8);
        Request* r = t.post_recv(1, user(2), &value, 8);
        finish_one(t, s);
        finish_one(t, r);
        t.release(s);
        t.release(r);
        ++value;
      } else {
        Request* r = t.post_recv(0, user(1), &value, 8);
        finish_one(t, r);
        Request* s = t.post_send(0, user(2), &value, 8);
        finish_one(t, s);
        t.release(r);
        t.release(s);
      }
    }
  };
  double best_us = 1e9;
  for (int trial = 0; trial < 3; ++trial) {
    auto start = Clock::now();
    std::thread other(ping_pong, 1, kRounds);
    ping_pong(0, kRounds);
    other.join();
    double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kRounds / 2;
    best_us = std::min(best_us, us);
  }
  std::fprintf(stderr, "[ucx] 8-byte one-way latency: %.2f us (best of 3 x %d round trips; %s)\n", best_us, kRounds,
               world[0].describe());

  constexpr size_t kBytes = 16u << 20;
  std::vector<uint8_t> source = pattern(kBytes, 16), sink(kBytes);
  double best_gbps = 0;
  for (int trial = 0; trial < 8; ++trial) {
    auto start = Clock::now();
    std::thread receiver([&] {
      Request* r = world[1].post_recv(0, user(5), sink.data(), kBytes);
      finish_one(world[1], r);
      world[1].release(r);
    });
    Request* s = world[0].post_send(1, user(5), source.data(), kBytes);
    finish_one(world[0], s);
    world[0].release(s);
    receiver.join();
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best_gbps = std::max(best_gbps, kBytes / seconds / 1e9);
  }
  cr_assert(sink == source);
  std::fprintf(stderr, "[ucx] 16 MiB send: %.2f GB/s (best of 8)\n", best_gbps);
}

// Whether tutti sets a transport's UCX defaults (MM_ERROR_HANDLING, the TCP segment
// sizes): only when UCX_TLS lets it open, since UCX warns of settings that no opened
// transport reads.
Test(ucx, transport_settings_only_where_ucx_tls_lets_them_in, .timeout = 10) {
  using tutti::transport::ucx::tls_allows;
  auto mm = [](const char* tls) { return tls_allows(tls, {"posix", "sysv"}, {"sm", "shm", "mm"}); };
  for (const char* yes :
       {"", "all", "sm", "shm", "mm", "posix", "tcp,sysv", "tcp, sm", "sysv:aux", "^tcp", "^posix", "^cma,knem"}) {
    cr_assert(mm(yes), "UCX_TLS=%s lets posix or sysv in", yes);
  }
  for (const char* no : {"tcp", "tcp,cma", "self,tcp", "^sm", "^shm,tcp", "^posix,sysv", "^all", "rc,ud"}) {
    cr_assert_not(mm(no), "UCX_TLS=%s keeps posix and sysv out", no);
  }
  auto tcp = [](const char* tls) { return tls_allows(tls, {"tcp"}, {}); };
  for (const char* yes : {"", "all", "tcp", "sm,tcp", "tcp:aux", "^sm", "^rc,ud"}) cr_assert(tcp(yes), "%s", yes);
  for (const char* no : {"sm", "posix,sysv,cma", "^tcp", "^sm,tcp", "^all"}) cr_assert_not(tcp(no), "%s", no);
}

// The transports the process's UCP context offers its workers, one "tcp/lo"-like entry
// each, as ucp_context_print_info lists its resources.
std::string context_resources() {
  auto context = tutti::transport::ucx::Context::shared();
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = open_memstream(&text, &length);
  cr_assert(stream != nullptr);
  ucp_context_print_info(context->get(), stream);
  std::fclose(stream);
  std::string printed(text, length);
  std::free(text);
  std::string resources;
  std::istringstream lines(printed);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("flags -- ");
    if (line.find("resource") != std::string::npos && at != std::string::npos) resources += line.substr(at + 9) + " ";
  }
  return resources;
}

// UCX_TLS unset: posix is set up and sysv, the same transport over System V shared
// memory, is not (context.h); UCX_TLS set by the user is theirs, sysv included.
Test(ucx, shared_memory_through_posix_alone_unless_ucx_tls_asks_for_sysv, .timeout = 30) {
  unsetenv("UCX_TLS");
  std::string resources = context_resources();
  cr_assert(resources.find("posix/") != std::string::npos, "%s", resources.c_str());
  cr_assert(resources.find("tcp/") != std::string::npos, "%s", resources.c_str());
  cr_assert(resources.find("sysv/") == std::string::npos, "%s", resources.c_str());
  // Context::shared() let go of the first context, so this one reads UCX_TLS afresh.
  setenv("UCX_TLS", "sysv,posix,tcp", 1);
  resources = context_resources();
  unsetenv("UCX_TLS");
  cr_assert(resources.find("sysv/") != std::string::npos, "%s", resources.c_str());
  cr_assert(resources.find("posix/") != std::string::npos, "%s", resources.c_str());
}

// What UCX logs at level info (to this process's stdout) while a world of 2 sends one
// 1 MiB message, past the rendezvous size, from rank 0 to rank 1.
std::string ucx_info_log_of_a_large_message() {
  cr_assert_eq(ucs_global_opts_set_value("LOG_LEVEL", "info"), UCS_OK);
  char path[] = "/tmp/tutti-test-ucx-log-XXXXXX";
  const int file = mkstemp(path);
  cr_assert(file >= 0, "mkstemp: %s", std::strerror(errno));
  std::fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  dup2(file, STDOUT_FILENO);
  {
    World world(2);
    std::vector<uint8_t> sent = pattern(1u << 20, 9);
    std::vector<uint8_t> received(sent.size());
    std::vector<Posted> posted = {{&world[1], world[1].post_recv(0, collective(1), received.data(), received.size())},
                                  {&world[0], world[0].post_send(1, collective(1), sent.data(), sent.size())}};
    finish(world, posted);
    cr_assert(received == sent);
    release_all(posted);
  }
  std::fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  close(file);
  ucs_global_opts_set_value("LOG_LEVEL", "warn");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  return text.str();
}

// Endpoints between processes of one host read large messages from the peer's memory
// (UCX's cma transport, which tutti lets in by setting its MEMORY_INVALIDATE; context.h)
// instead of copying them through the shared-memory FIFO; UCX_CMA_MEMORY_INVALIDATE=n,
// the user's word, keeps it out. UCX names an endpoint's transports in an info line,
// "ep_cfg[0]: tag(sysv/memory cma/memory) ka(sysv/memory)".
Test(ucx, same_host_endpoints_read_large_messages_from_the_peer, .timeout = 60) {
  if (!tutti::transport::ucx::cma_permitted()) {
    std::fprintf(stderr, "SKIPPED: the kernel does not let this process read another's memory (Yama, seccomp)\n");
    cr_skip_test("process_vm_readv is not permitted here");
  }
  setenv("UCX_TLS", "sm", 1);
  std::string log = ucx_info_log_of_a_large_message();
  cr_assert(contains(log, "ep_cfg[") && contains(log, "cma/memory"), "no endpoint took cma:\n%s", log.c_str());
  cr_assert_not(contains(log, "invalid configuration"), "UCX refused a setting:\n%s", log.c_str());
  setenv("UCX_CMA_MEMORY_INVALIDATE", "n", 1);
  log = ucx_info_log_of_a_large_message();
  cr_assert(contains(log, "ep_cfg["), "UCX logged no endpoint:\n%s", log.c_str());
  cr_assert_not(contains(log, "cma/memory"), "an endpoint took cma though the user said no:\n%s", log.c_str());
}

// This process's mapped files, as /proc/self/maps lists them.
std::string mapped_files() {
  std::ifstream in("/proc/self/maps");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Where the machine has no RDMA device, UCX's InfiniBand and RDMA-CM modules are never
// loaded (libibverbs would load every provider library it knows of to find none;
// context.h). A world of 2 that sends a message has made the process's UCX context.
Test(ucx, no_rdma_modules_where_the_machine_has_no_rdma_device, .timeout = 30) {
  if (tutti::transport::ucx::rdma_devices_present()) {
    std::fprintf(stderr, "SKIPPED: this machine lists RDMA devices, so UCX loads its ib module as usual\n");
    cr_skip_test("the machine has RDMA devices");
  }
  unsetenv("UCX_MODULES");
  World world(2);
  char sent[8] = "rdma?", received[8] = {};
  std::vector<Posted> posted = {{&world[1], world[1].post_recv(0, collective(1), received, sizeof received)},
                                {&world[0], world[0].post_send(1, collective(1), sent, sizeof sent)}};
  finish(world, posted);
  release_all(posted);
  std::string maps = mapped_files();
  cr_assert(contains(maps, "libucp.so"), "UCX is not mapped at all:\n%s", maps.c_str());
  cr_assert_not(contains(maps, "libuct_ib.so") || contains(maps, "libuct_rdmacm.so") || contains(maps, "libibverbs"),
                "UCX loaded its RDMA modules on a machine without RDMA devices:\n%s", maps.c_str());
}

// UCX_MODULES in the environment is the user's word: UCX loads what it names, its ib
// module included where UCX has one installed.
Test(ucx, ucx_modules_from_the_user_are_left_alone, .timeout = 30) {
  std::string maps = mapped_files();
  size_t name = maps.find("/libucp.so");
  cr_assert(name != std::string::npos, "UCX is not mapped at all:\n%s", maps.c_str());
  size_t start = maps.rfind(' ', name) + 1;
  std::string ib_module = maps.substr(start, name - start) + "/ucx/libuct_ib.so.0";
  if (access(ib_module.c_str(), F_OK) != 0) {
    std::fprintf(stderr, "SKIPPED: this UCX has no ib module (%s) to load\n", ib_module.c_str());
    cr_skip_test("no ib module installed");
  }
  // UCX read its own options when it was loaded, before this; what the test checks is
  // that tutti, seeing the variable, sets no list of its own (and UCX, which never
  // read it, is asked not to warn of it).
  setenv("UCX_MODULES", "all", 1);
  cr_assert_eq(ucs_global_opts_set_value("WARN_UNUSED_ENV_VARS", "n"), UCS_OK);
  World world(2);
  cr_assert(contains(mapped_files(), "libuct_ib.so"), "UCX_MODULES=all, yet UCX did not load %s", ib_module.c_str());
}

// A network device that the process's UCX context listed, gone before a worker is made
// (a container's interface, another test's namespace: a clean-clone CI run of f0c028b
// failed so, ucp_worker_create saying "No such device" on 3 ranks of 5): the worker is
// made from a context that lists them again, and carries messages. In a network and
// mount namespace of the test's own, with a veth pair made there and sysfs mounted
// there (UCX lists the devices from it); skipped, saying why, where that cannot be.
Test(ucx, a_network_device_gone_since_the_context_was_made_is_listed_again, .timeout = 60) {
  if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) {
    cr_skip_test("SKIPPED: unshare(CLONE_NEWNET | CLONE_NEWNS): %s (needs root)", std::strerror(errno));
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
      ::mount("sysfs", "/sys", "sysfs", 0, nullptr) != 0) {
    cr_skip_test("SKIPPED: could not mount a sysfs of the test's namespace: %s", std::strerror(errno));
  }
  if (std::system("ip link set lo up && ip link add tutti-va type veth peer name tutti-vb && "
                  "ip addr add 10.99.0.1/24 dev tutti-va && ip link set tutti-va up && ip link set tutti-vb up") != 0) {
    cr_skip_test("SKIPPED: could not make a veth pair in the test's namespace (iproute2 and veth needed)");
  }
  auto until = Clock::now() + std::chrono::seconds(5);
  std::string state;
  while (state != "up" && Clock::now() < until) {
    std::ifstream("/sys/class/net/tutti-va/operstate") >> state;
    if (state != "up") std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  cr_assert_eq(state, "up", "the veth pair did not come up within 5 s");
  auto listed = tutti::transport::ucx::Context::shared();
  char* text = nullptr;
  size_t length = 0;
  FILE* info = ::open_memstream(&text, &length);
  ucp_context_print_info(listed->get(), info);
  std::fclose(info);
  const bool has_device = std::string(text, length).find("tutti-va") != std::string::npos;
  std::free(text);
  if (!has_device) cr_skip_test("SKIPPED: UCX did not list the veth device (UCX_TLS or UCX_NET_DEVICES set?)");
  cr_assert_eq(std::system("ip link del tutti-va"), 0, "could not delete the veth pair");

  World world(2);  // each worker from the listed context fails; a renewed one is made
  const std::string message = "after the device went";
  char landing[64] = {};
  std::vector<Posted> posted = {{&world[1], world[1].post_recv(0, user(1), landing, sizeof(landing))},
                                {&world[0], world[0].post_send(1, user(1), message.data(), message.size())}};
  finish(world, posted);
  cr_assert_str_eq(landing, message.c_str());
  release_all(posted);
}
