// The growth guard of issue 21: 2,000 simulated ranks go through init and destroy
// (bench/simulated_rank.h: the real client, meeting, failure detector and leave, with
// the transports' store traffic mirrored) against a store in this process, and the
// store's requests, reply bytes and socket writes per rank must stay under a constant
// bound. Counts, not times: they do not depend on how loaded the machine is, and an
// all-to-all through the store (every rank reading every address: 2,000 x ~220 bytes
// per rank here) or rank 0 making a round trip per rank shows up in them at once; so
// does a step that stops sending its requests together (the writes).
// tutti-rendezvous-bench runs the same steps for the times.
#include <criterion/criterion.h>

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "bench/simulated_rank.h"
#include "runtime/loop/loop.h"
#include "runtime/store/relay.h"
#include "runtime/store/server.h"
#include "tests/support/processes.h"

namespace {

constexpr int kRanks = 2000;

// Measured at 2,000 ranks (2026-11-26): 19.0 requests, 3,470 reply bytes and 10.0
// writes per rank. Per rank: 2 HELLOs (the secret's challenge); the meeting's 7, in
// two pipelines; the UCX card; 3 for shared memory; the detector's MEMBER and
// HEARTBEAT (one pipeline) and parked GET; one MULTI_GET of the usual peers' cards
// (rank +- 1 and rank ^ 2^k: 11.9 cards on average, growing as log N, 13.9 at 10,000
// ranks); the HEARTBEAT that ends the watch and leave's 2, together. Rank 0's reads and
// places add ~0 per rank. The peers' cards are most of the bytes (~235 each). The
// bounds leave room for a few requests more per rank and for log N at larger sizes,
// not for anything that grows with N.
constexpr double kMaxRequestsPerRank = 26;
constexpr double kMaxReplyBytesPerRank = 5 * 1024;
constexpr double kMaxWritesPerRank = 16;

// 2,000 ranks on the store's side of them, through kRelays relays.
constexpr int kRelays = 4;
constexpr const char* kSecret = "a job secret";

// Runs kRanks simulated ranks against the store at port (through the relays at
// relay_ports, if any), after checking this process may open their descriptors.
tutti::bench::BatchOutcome run_job(uint16_t port, std::vector<uint16_t> relay_ports = {}) {
  uint64_t file_limit = tutti::bench::raise_file_limit();
  // A connection each, at both ends, in this one process.
  cr_assert_geq(file_limit, 2 * kRanks + 256, "this test needs %d open files; the limit is %llu", 2 * kRanks + 256,
                static_cast<unsigned long long>(file_limit));
  tutti::bench::SimulatedJob job;
  job.port = port;
  job.relay_ports = std::move(relay_ports);
  job.secret = kSecret;
  job.world_size = kRanks;
  job.init_timeout_ms = tt_timeout_ms(200000);
  // No periodic heartbeat within the run, so that the count does not depend on its
  // length: the detector's first heartbeat and its watch are still there.
  job.heartbeat_interval_ms = 3600 * 1000;
  job.heartbeat_timeout_ms = 2 * job.heartbeat_interval_ms;
  tutti::bench::BatchOutcome outcome = tutti::bench::run_ranks(job, 0, kRanks, 4, nullptr);
  cr_assert_eq(outcome.failed, 0, "%d of %d simulated ranks failed; the first: %s", outcome.failed, kRanks,
               outcome.first_error.c_str());
  return outcome;
}

}  // namespace

Test(rendezvous_scale, two_thousand_ranks_cost_the_store_a_constant_per_rank, .timeout = 240) {
  auto server_loop = tutti::loop::Loop::create();
  auto server = tutti::store::Server::start(server_loop, "127.0.0.1", 0, {}, kSecret);
  tutti::bench::BatchOutcome outcome = run_job(server->port());

  tutti::store::ServerStats stats = server->stats();
  double requests_per_rank = static_cast<double>(stats.requests) / kRanks;
  double reply_bytes_per_rank = static_cast<double>(stats.reply_bytes) / kRanks;
  double writes_per_rank = static_cast<double>(stats.writes) / kRanks;
  std::fprintf(stderr,
               "rendezvous_scale: %d ranks: %.2f requests, %.0f reply bytes and %.2f writes per rank, "
               "placed in %.2f s, done in %.2f s\n",
               kRanks, requests_per_rank, reply_bytes_per_rank, writes_per_rank,
               (outcome.last_placed_ns - outcome.first_start_ns) / 1e9,
               (outcome.last_done_ns - outcome.first_start_ns) / 1e9);
  cr_expect_leq(requests_per_rank, kMaxRequestsPerRank,
                "the store served %.2f requests per rank (bound %.0f): something in init or destroy now grows with "
                "the world size",
                requests_per_rank, kMaxRequestsPerRank);
  cr_expect_leq(reply_bytes_per_rank, kMaxReplyBytesPerRank,
                "the store wrote %.0f reply bytes per rank (bound %.0f): something in init or destroy now reads "
                "O(N) keys per rank",
                reply_bytes_per_rank, kMaxReplyBytesPerRank);
  cr_expect_leq(writes_per_rank, kMaxWritesPerRank,
                "the store made %.2f socket writes per rank (bound %.0f): some step sends its requests one round "
                "trip at a time again, or the store writes each reply on its own",
                writes_per_rank, kMaxWritesPerRank);
}

// The same job through relays (store/relay.h), each on a loop of its own as each would
// be a node's process: the store serves one connection per relay, and what the relays
// carry up reaches it in few writes; each rank's traffic is the relay's to serve.
Test(rendezvous_scale, two_thousand_ranks_through_relays_cost_the_store_a_connection_per_relay, .timeout = 240) {
  auto server_loop = tutti::loop::Loop::create();
  auto server = tutti::store::Server::start(server_loop, "127.0.0.1", 0, {}, kSecret);
  std::vector<std::shared_ptr<tutti::loop::Loop>> relay_loops;
  std::vector<std::unique_ptr<tutti::store::Server>> relays;
  std::vector<uint16_t> relay_ports;
  for (int r = 0; r < kRelays; ++r) {
    tutti::store::RelaySetup setup;
    setup.store_host = "127.0.0.1";
    setup.store_port = server->port();
    setup.secret = kSecret;
    relay_loops.push_back(tutti::loop::Loop::create());
    relays.push_back(
        tutti::store::start_relay(relay_loops.back(), setup, tutti::Deadline::after_ms(tt_timeout_ms(10000))));
    relay_ports.push_back(relays.back()->port());
  }
  run_job(server->port(), relay_ports);

  tutti::store::ServerStats stats = server->stats();
  size_t relayed_connections = 0;
  for (const auto& relay : relays) relayed_connections += relay->stats().peak_connections;
  double store_writes_per_rank = static_cast<double>(stats.writes) / kRanks;
  std::fprintf(stderr,
               "rendezvous_scale: %d ranks through %d relays: the store's peak connections %zu, %.2f requests and "
               "%.3f writes per rank; the relays' connections %zu\n",
               kRanks, kRelays, stats.peak_connections, static_cast<double>(stats.requests) / kRanks,
               store_writes_per_rank, relayed_connections);
  cr_expect_leq(stats.peak_connections, static_cast<size_t>(kRelays),
                "the store served %zu connections at once for %d relays: ranks reach it past their relays",
                stats.peak_connections, kRelays);
  cr_expect_geq(relayed_connections, static_cast<size_t>(kRanks), "the relays served %zu connections for %d ranks",
                relayed_connections, kRanks);
  cr_expect_leq(static_cast<double>(stats.requests) / kRanks, kMaxRequestsPerRank,
                "the store served %.2f requests per rank (bound %.0f)", static_cast<double>(stats.requests) / kRanks,
                kMaxRequestsPerRank);
  // What a relay carries up in one turn of its loop goes in one write, and so do the
  // store's answers to it: far fewer than a write per rank.
  cr_expect_leq(store_writes_per_rank, 2.0,
                "the store made %.2f socket writes per rank through relays: the relays' traffic is no longer "
                "carried in batches",
                store_writes_per_rank);
  relays.clear();  // before the store: a relay whose ranks have left is no loss
}
