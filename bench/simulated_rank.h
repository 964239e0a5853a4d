// A simulated rank: what one rank's tutti_comm_init and tutti_comm_destroy do to the
// rendezvous store, without UCX, shared memory or a process of its own, so that
// thousands of ranks fit in a few processes of one machine. Shared by
// tutti-rendezvous-bench (bench/rendezvous_bench.cc), which times it against torch's
// TCPStore, and the test suite's growth guard
// (tests/runtime/rendezvous/test_rendezvous_scale.cc), which counts its store requests:
// one list of steps, so that the guard checks what the bench measures.
//
// Lives in bench/, not tests/support/: the bench is built without the tests
// (TUTTI_BUILD_TESTS=OFF), and the test can link a bench library but not the reverse.
//
// The steps, in Comm::init's and ~Comm's order (runtime/comm/comm.cc); "real" runs the
// runtime's own code, "mirrored" sends the same requests under the same keys:
//   1. store::Client::connect, with the job secret                      real
//   2. rendezvous::meet                                                 real
//   3. UCX: SET this rank's card under <prefix>ucx/ucx/<rank>, unwaited mirrored (transport/ucx/connect.cc)
//   4. shared memory, per simulated node: Segment::share's keys          mirrored (transport/shm/segment.cc)
//   5. the failure detector: a HEARTBEAT and a parked GET of the first   real (health::Monitor)
//      loss event, unwaited, then a heartbeat per interval while it runs
//   6. UCX lookups of the usual peers, in one MULTI_GET                mirrored (connect.cc's StoreDirectory)
//   7. destroy: the monitor's HEARTBEAT(0), then rendezvous::leave      real
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loop/loop.h"

namespace tutti::bench {

// What every rank of one simulated job shares.
struct SimulatedJob {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string secret;  // "" for none
  // Relays (store/relay.h) in front of the store, if any: a simulated node's ranks
  // connect to relay (node % relays), as a node's ranks would to their node's relay.
  std::vector<uint16_t> relay_ports;
  int world_size = 0;
  int ranks_per_node = 8;  // consecutive ranks share a simulated node name
  int64_t init_timeout_ms = 120000;
  // The failure detector's (TUTTI_HEARTBEAT_INTERVAL_MS, TUTTI_HEARTBEAT_TIMEOUT_MS).
  // The growth guard makes the interval longer than its run, so that its request
  // count does not depend on how fast the machine is.
  int64_t heartbeat_interval_ms = 1000;
  int64_t heartbeat_timeout_ms = 20000;
  int card_bytes = 200;  // a UCX worker address is about this long
  // How long each rank stays up between init and destroy, its failure detector
  // sending a heartbeat per interval: what heartbeats cost the store shows as the
  // difference in its CPU with and without a hold.
  int64_t hold_ms = 0;
};

// What a batch of ranks in one process did, times on the steady clock (one clock for
// every process of the machine), in ns.
struct BatchOutcome {
  int ranks = 0;
  int failed = 0;
  int64_t first_start_ns = 0;       // the earliest connect
  int64_t last_connected_ns = 0;    // the latest return from store::Client::connect
  int64_t last_placed_ns = 0;       // the latest return from rendezvous::meet
  int64_t last_initialised_ns = 0;  // the latest end of init (its first peers' cards read)
  int64_t last_done_ns = 0;         // the latest end of destroy
  std::string first_error;          // of the first rank to fail, "" if none
};

// Runs ranks [first, first + count) of the job, a thread each (256 KiB stacks, so
// that thousands fit) over `loops` event loops that play the processes' loops. Once
// every thread is up, calls all_started (if set) and releases them all when it
// returns, so that thread creation stays out of the times.
BatchOutcome run_ranks(const SimulatedJob& job, int first, int count, int loops,
                       const std::function<void()>& all_started);

// Raises this process's soft limit on open files to its hard limit: each simulated
// rank holds a connection. Returns the limit now in force.
uint64_t raise_file_limit();

}  // namespace tutti::bench
