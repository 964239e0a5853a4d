#include "bench/simulated_rank.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/health/activity_board.h"
#include "runtime/health/monitor.h"
#include "runtime/rendezvous/meeting.h"
#include "runtime/rendezvous/plan.h"
#include "runtime/store/client.h"
#include "runtime/transport/ucx/connect.h"

namespace tutti::bench {
namespace {

// Comm::init's first world (comm.cc next_world_prefix).
const char* const kPrefix = "world.0/";
// connect.cc's kLookUpSliceMs: a parked lookup is asked again this often.
constexpr int64_t kLookUpSliceMs = 10000;
constexpr size_t kStackBytes = 256 << 10;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string node_name(const SimulatedJob& job, int rank) { return concat("sim-node-", rank / job.ranks_per_node); }

// Plan as make_plan fills it under tutti launch with tcp://, except that the meeting
// numbers the nodes from their names (the launcher's local ranks left out), so that
// rank 0's place-numbering step runs too.
rendezvous::Plan plan_for(const SimulatedJob& job, int rank) {
  rendezvous::Plan plan;
  plan.init_method = concat("tcp://", job.host, ":", job.port);
  plan.rank = rank;
  plan.world_size = job.world_size;
  plan.node_key = node_name(job, rank);
  plan.launcher = "tutti";
  plan.store_host = job.host;
  plan.store_port = job.port;
  plan.serve_store = false;  // the store lives in a process of its own, as tutti launch's does
  plan.store_owner = "tutti launch";
  plan.secret = job.secret;
  return plan;
}

// connect.cc's card: "<host>\n<pid>\n<address>", with a stand-in for the binary UCX
// worker address of about the real size.
std::string card_of(const SimulatedJob& job, int rank) {
  std::string address(static_cast<size_t>(job.card_bytes), '\0');
  for (size_t i = 0; i < address.size(); ++i) address[i] = static_cast<char>((rank * 131 + i * 7) & 0xff);
  return concat(node_name(job, rank), "\n", 100000 + rank, "\n") + address;
}

// Mirrors Segment::share (transport/shm/segment.cc) with the store alone: the node's
// local rank 0 ("lead") publishes the segment's name, waits for every other local
// rank's mapped/<r> in one MULTI_GET and says the verdict; the others ("follow") read
// the name, say they mapped it, and read the verdict. Under a prefix per simulated
// node, since the nodes of one machine share the store.
void share_segment(store::Client& store, const std::string& prefix, const rendezvous::Place& place, Deadline deadline) {
  if (place.local_rank == 0) {
    std::vector<std::string> keys;
    for (int r = 1; r < place.local_size; ++r) keys.push_back(concat(prefix, "mapped/", r));
    auto published = store.pipeline(deadline);
    published->set(prefix + "name", concat("/tutti-", getpid(), "-4026531836-", place.rank));
    if (!keys.empty()) published->multi_get(keys);
    published->wait_all();
    store.set(prefix + "verdict", "", deadline);
    return;
  }
  store.get(prefix + "name", deadline);
  auto mapped = store.pipeline(deadline);
  size_t told = mapped->set(concat(prefix, "mapped/", place.local_rank), "1");
  mapped->wait(mapped->multi_get({prefix + "verdict"}));
  mapped->wait(told);
}

// Mirrors connect.cc's StoreDirectory at a program's first collective: the usual
// peers' cards in one MULTI_GET, asked again when its slice times out.
void look_up_peers(store::Client& store, const std::string& prefix, int rank, int size, Deadline deadline) {
  std::vector<std::string> keys;
  for (int peer : transport::ucx::usual_peers(rank, size)) keys.push_back(concat(prefix, "ucx/ucx/", peer));
  if (keys.empty()) return;
  for (;;) {
    try {
      store.multi_get(keys, Deadline::after_ms(std::min(deadline.remaining_ms(), kLookUpSliceMs)));
      return;
    } catch (const Error& error) {
      if (error.status() != Status::kTimeout || deadline.expired()) throw;
    }
  }
}

struct RankTimes {
  int64_t started_ns = 0;
  int64_t connected_ns = 0;
  int64_t placed_ns = 0;
  int64_t initialised_ns = 0;
  int64_t done_ns = 0;
};

RankTimes run_rank(const SimulatedJob& job, int rank, const std::shared_ptr<loop::Loop>& loop) {
  RankTimes times;
  times.started_ns = now_ns();
  const Deadline deadline = Deadline::after_ms(job.init_timeout_ms);
  const std::string prefix = kPrefix;
  const std::string where = concat("simulated rank ", rank, " of ", job.world_size);

  // Through its node's relay where there are relays: the plan still names the store,
  // as a rank's does, since the relay stands in for it.
  uint16_t port = job.relay_ports.empty()
                      ? job.port
                      : job.relay_ports[static_cast<size_t>(rank / job.ranks_per_node) % job.relay_ports.size()];
  auto store = store::Client::connect(loop, job.host, port, deadline, job.secret);
  times.connected_ns = now_ns();
  rendezvous::Place place =
      rendezvous::meet(*store, prefix, plan_for(job, rank), concat(node_name(job, rank), ":", 100000 + rank), deadline,
                       "tutti_comm_init");
  times.placed_ns = now_ns();

  // Engine::create: the UCX card, then shared memory. (Real tutti shares memory only in
  // a one-node communicator; here each simulated node does, as a multi-node job will.)
  health::ActivityBoard board(*store, prefix, rank, job.world_size);
  store->set_async(concat(prefix, "ucx/ucx/", rank), card_of(job, rank),
                   [](Status, const std::string&, const std::string&) {});
  share_segment(*store, concat(prefix, "shm/", place.node_rank, "/"), place, deadline);

  health::MonitorSetup watch;
  watch.loop = loop;
  watch.store = store.get();
  watch.prefix = prefix;
  watch.rank = rank;
  watch.where = where;
  watch.store_owner = "tutti launch";
  watch.interval_ms = job.heartbeat_interval_ms;
  watch.timeout_ms = job.heartbeat_timeout_ms;
  watch.board = &board;
  std::atomic<bool> lost{false};
  watch.on_failure = [&lost](Status, const std::string&) { lost = true; };
  auto monitor = health::Monitor::start(std::move(watch));

  // A program's first collectives: the transport looks its peers' cards up lazily.
  look_up_peers(*store, prefix, rank, job.world_size, deadline);
  times.initialised_ns = now_ns();
  if (job.hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(job.hold_ms));

  // ~Comm: the monitor leaves the store's watch, then the meeting.
  monitor.reset();
  if (lost) fail(Status::kPeerLost, concat(where, ": the failure detector reported a loss during the run"));
  rendezvous::leave(*store, prefix, rank, job.world_size, false, Deadline::after_ms(job.init_timeout_ms));
  store.reset();
  times.done_ns = now_ns();
  return times;
}

// Linux 6.16 gave each process a futex hash of its own, sized for its CPUs (16 slots
// here), not its threads: thousands of threads, each parked on a futex of its own
// between round trips, then share a few long chains, and every wake-up walks one
// (futex_wake was 10% of the machine's time at 10,000 ranks). One slot per thread,
// as the prctl allows; older kernels refuse it, and hash futexes machine-wide anyway.
void widen_futex_hash(int threads) {
  constexpr int kFutexHash = 78;         // PR_FUTEX_HASH, newer than Debian 12's headers
  constexpr int kFutexHashSetSlots = 1;  // PR_FUTEX_HASH_SET_SLOTS
  unsigned long slots = 16;
  while (slots < static_cast<unsigned long>(threads) && slots < (1ul << 17)) slots <<= 1;
  prctl(kFutexHash, kFutexHashSetSlots, slots, 0ul, 0ul);
}

// What a thread of run_ranks needs; it starts on a pthread of a set stack size.
struct Thread {
  std::function<void()> body;
  pthread_t id{};
  static void* main(void* self) {
    static_cast<Thread*>(self)->body();
    return nullptr;
  }
};

}  // namespace

BatchOutcome run_ranks(const SimulatedJob& job, int first, int count, int loops,
                       const std::function<void()>& all_started) {
  widen_futex_hash(count);
  std::vector<std::shared_ptr<loop::Loop>> event_loops;
  for (int i = 0; i < std::max(1, loops); ++i) event_loops.push_back(loop::Loop::create());

  // The start line: threads count themselves up, then sleep on `start` until it says
  // go (or that a thread could not be made). Atomics, not a mutex and a condition
  // variable: thousands of threads woken at once that then take one mutex in turn cost
  // the kernel a futex wake per handoff (25,000 ranks: 16.4 s -> 13.9 s, one run each).
  enum : int { kWait, kGo, kAbandon };
  std::atomic<int> up{0};
  std::atomic<int> start{kWait};
  std::vector<RankTimes> times(static_cast<size_t>(count));
  std::vector<std::string> errors(static_cast<size_t>(count));

  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, kStackBytes);
  std::vector<std::unique_ptr<Thread>> threads;
  for (int i = 0; i < count; ++i) {
    auto thread = std::make_unique<Thread>();
    thread->body = [&, i] {
      if (up.fetch_add(1) + 1 == count) up.notify_one();
      start.wait(kWait);
      if (start.load() == kAbandon) return;
      try {
        times[i] = run_rank(job, first + i, event_loops[i % event_loops.size()]);
      } catch (const std::exception& e) {
        errors[i] = concat("rank ", first + i, ": ", e.what());
      }
    };
    int error = pthread_create(&thread->id, &attributes, &Thread::main, thread.get());
    if (error != 0) {
      pthread_attr_destroy(&attributes);
      // The threads made so far wait for a go: release them to return without a word.
      start.store(kAbandon);
      start.notify_all();
      for (auto& made : threads) pthread_join(made->id, nullptr);
      fail(Status::kNoMemory, concat("cannot start thread ", i + 1, " of ", count, " (error ", error,
                                     "); check ulimit -u and the memory free"));
    }
    threads.push_back(std::move(thread));
  }
  pthread_attr_destroy(&attributes);
  for (int now = up.load(); now < count; now = up.load()) up.wait(now);
  if (all_started) all_started();
  start.store(kGo);
  start.notify_all();
  for (auto& thread : threads) pthread_join(thread->id, nullptr);

  BatchOutcome outcome;
  outcome.ranks = count;
  for (int i = 0; i < count; ++i) {
    if (!errors[i].empty()) {
      if (outcome.failed++ == 0) outcome.first_error = errors[i];
      continue;
    }
    const RankTimes& t = times[i];
    if (outcome.first_start_ns == 0 || t.started_ns < outcome.first_start_ns) outcome.first_start_ns = t.started_ns;
    outcome.last_connected_ns = std::max(outcome.last_connected_ns, t.connected_ns);
    outcome.last_placed_ns = std::max(outcome.last_placed_ns, t.placed_ns);
    outcome.last_initialised_ns = std::max(outcome.last_initialised_ns, t.initialised_ns);
    outcome.last_done_ns = std::max(outcome.last_done_ns, t.done_ns);
  }
  return outcome;
}

uint64_t raise_file_limit() {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

}  // namespace tutti::bench
