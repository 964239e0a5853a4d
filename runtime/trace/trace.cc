#include "runtime/trace/trace.h"

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/log.h"
#include "runtime/common/settings.h"
#include "runtime/trace/event_json.h"

namespace tutti::trace {
namespace detail {

std::atomic<bool> on{false};

uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000 + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace detail

namespace {

// 8,192 events of 120 bytes: about 1 MB per recording thread (a user's thread, an
// executor's, the event loop's), drained at each heartbeat.
constexpr uint64_t kRingEvents = 8192;
// Room kept for the ends of the spans open on a thread: a begin, an X or an instant is
// dropped when the ring holds more than kRingEvents - kReserve, so that an end always
// finds room. Deeper nesting than this drops the deeper spans.
constexpr uint64_t kReserve = 64;

// One thread's events, written by that thread only (head) and read under the
// session's mutex (tail): a single-producer ring without locks on the producer's side.
struct Ring {
  Event slots[kRingEvents];
  std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> tail{0};
};

// A recording thread's state: its ring, and which of its open spans were kept (a bit
// per depth), so that the end of a dropped begin is dropped too.
struct ThreadState {
  std::shared_ptr<Ring> ring;
  uint64_t kept = 0;
  int depth = 0;
};

struct Session {
  std::mutex mutex;  // everything below, and the rings' tails
  bool started = false;
  FILE* file = nullptr;
  std::string path;
  int pid = 0;  // the rank: one Chrome trace "process" per rank
  // Stamps to microseconds since the epoch: stamp0 is the epoch, ns_per_stamp measured
  // against the monotonic clock since (refined at each drain).
  uint64_t stamp0 = 0;
  uint64_t monotonic0 = 0;
  double epoch_fraction_us = 0;  // the epoch's wall clock past its whole microsecond
  std::atomic<double> ns_per_stamp{1.0};
  int next_track = kHealthTrack + 1;
  std::vector<std::shared_ptr<Ring>> rings;
  std::string buffer;
  bool first_line = true;
  std::unordered_set<int64_t> dropped_async;  // asynchronous begins dropped, whose ends must go too
  std::atomic<bool> any_dropped_async{false};
};

std::atomic<uint64_t> dropped{0};

// Never destroyed: threads may still record while the process exits. A forked child
// replaces it (forget_in_child).
Session*& session_slot() {
  static Session* instance = new Session();
  return instance;
}
Session& session() { return *session_slot(); }

// The hot path reads a plain pointer (one TLS lookup, no guard); the owner, touched
// once per thread, frees the state as the thread ends, and the session's reference
// keeps its ring until drained.
thread_local ThreadState* t_state = nullptr;
thread_local std::unique_ptr<ThreadState> t_owner;

ThreadState& own_state() {
  if (t_state == nullptr) [[unlikely]] {
    t_owner = std::make_unique<ThreadState>();
    t_owner->ring = std::make_shared<Ring>();
    t_state = t_owner.get();
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.rings.push_back(t_owner->ring);
  }
  return *t_state;
}

void add_line_locked(Session& s, const std::string& json) {
  if (!s.first_line) s.buffer += ',';
  s.first_line = false;
  s.buffer += json;
  s.buffer += '\n';
}

void add_metadata_locked(Session& s, int track, const char* name, const std::string& args) {
  add_line_locked(s, concat("{\"ph\":\"M\",\"pid\":", s.pid, ",\"tid\":", track, ",\"name\":\"", name, "\",\"args\":{",
                            args, "}}"));
}

int64_t wall_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// The clocks read at one stamp. Two reads in a row are not one moment: a page fault (the
// first call into a page of code or the vDSO), an interrupt or a preemption between them
// puts microseconds there, which would move every event of the process by as much
// (enough to draw a receive ending before its send began). So stamps bracket the reads,
// the tightest of a few tries is kept (the first pays the faults), and the clocks belong
// to its midpoint: within a few tens of nanoseconds.
struct ClockReading {
  uint64_t stamp = 0;
  uint64_t monotonic_ns = 0;
  int64_t wall_ns = 0;  // only when asked for
};

ClockReading read_clocks(bool with_wall) {
  constexpr int kTries = 5;
  ClockReading best;
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < kTries; ++i) {
    const uint64_t before = stamp();
    const uint64_t monotonic = detail::monotonic_ns();
    const int64_t wall = with_wall ? wall_ns() : 0;
    const uint64_t after = stamp();
    if (after - before < best_width) {
      best_width = after - before;
      best = ClockReading{before + (after - before) / 2, monotonic, wall};
    }
  }
  return best;
}

void recalibrate_locked(Session& s) {
  const ClockReading now = read_clocks(false);
  const uint64_t stamps = now.stamp - s.stamp0;
  const uint64_t ns = now.monotonic_ns - s.monotonic0;
  if (ns > 10'000'000 && stamps > 0) s.ns_per_stamp.store(static_cast<double>(ns) / static_cast<double>(stamps));
}

double micros_since_epoch(const Session& s, uint64_t at) {
  return s.epoch_fraction_us + static_cast<double>(static_cast<int64_t>(at - s.stamp0)) * s.ns_per_stamp.load() / 1000;
}

void add_event_locked(Session& s, const Event& event, const std::string& text) {
  std::string line;
  append_json(event, s.pid, micros_since_epoch(s, event.stamp),
              static_cast<double>(event.length) * s.ns_per_stamp.load() / 1000, text, &line);
  add_line_locked(s, line);
}

void drain_locked(Session& s, Ring& ring) {
  uint64_t tail = ring.tail.load(std::memory_order_relaxed);
  const uint64_t head = ring.head.load(std::memory_order_acquire);
  for (; tail != head; ++tail) add_event_locked(s, ring.slots[tail % kRingEvents], "");
  ring.tail.store(tail, std::memory_order_release);
}

void write_out_locked(Session& s) {
  if (s.file == nullptr || s.buffer.empty()) return;
  std::fwrite(s.buffer.data(), 1, s.buffer.size(), s.file);
  std::fflush(s.file);
  s.buffer.clear();
}

bool make_folder(const std::string& path) {
  for (size_t at = 0; at != std::string::npos;) {
    at = path.find('/', at + 1);
    std::string partial = path.substr(0, at);
    if (!partial.empty() && mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// Whether event is dropped: the ring is full (but for the ends of spans it kept), or it
// ends a span whose begin was dropped.
bool dropping(const Event& event, uint64_t used, ThreadState& nesting) {
  const bool room = used < kRingEvents - kReserve;
  switch (event.phase) {
    case Phase::kBegin: {
      const bool kept = room && nesting.depth < static_cast<int>(kReserve);
      if (nesting.depth < 64) {
        nesting.kept =
            kept ? nesting.kept | (uint64_t{1} << nesting.depth) : nesting.kept & ~(uint64_t{1} << nesting.depth);
      }
      ++nesting.depth;
      return !kept;
    }
    case Phase::kEnd: {
      if (nesting.depth == 0) return true;  // a begin before tracing started
      --nesting.depth;
      return nesting.depth >= 64 || (nesting.kept & (uint64_t{1} << nesting.depth)) == 0;
    }
    case Phase::kAsyncBegin:
      if (room) return false;
      {
        Session& s = session();
        std::lock_guard<std::mutex> lock(s.mutex);
        s.dropped_async.insert(event.id);
        s.any_dropped_async.store(true, std::memory_order_relaxed);
      }
      return true;
    case Phase::kAsyncEnd: {
      Session& s = session();
      if (s.any_dropped_async.load(std::memory_order_relaxed)) {
        std::lock_guard<std::mutex> lock(s.mutex);
        if (s.dropped_async.erase(event.id) > 0) return true;
      }
      return used >= kRingEvents;
    }
    default: return !room;
  }
}

// A process forked from a traced one (os.fork, fork() without exec) inherits the
// session: the file's descriptor, shared with the parent, and the events the parent
// had not yet written. It must write neither (its exit would otherwise end the
// parent's file, and write those events twice): it forgets both, and if it starts a
// communicator with tracing, it writes a file of its own. The session's mutex is held
// across the fork, so that the child never copies it locked by a thread it lacks.
void lock_for_fork() { session().mutex.lock(); }
void unlock_after_fork() { session().mutex.unlock(); }
void forget_in_child() {
  detail::on.store(false, std::memory_order_relaxed);
  Session*& slot = session_slot();
  if (slot->file != nullptr) std::fclose(slot->file);  // the child's descriptor; written out already
  slot = new Session();  // the inherited one, its mutex held across the fork, is left behind
  // This thread's ring belongs to the inherited session: its next event makes one in
  // the new session (the only thread the child has).
  t_owner.reset();
  t_state = nullptr;
  dropped.store(0, std::memory_order_relaxed);
}

}  // namespace

bool start(int rank, const std::string& identity, const std::string& configured) {
  static std::once_flag fork_handlers;
  std::call_once(fork_handlers, [] { pthread_atfork(lock_for_fork, unlock_after_fork, forget_in_child); });
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.started) return on();
  s.started = true;
  std::string folder = settings::text("TUTTI_TRACE").value_or(configured);
  if (folder.empty()) return false;
  std::string host = identity.substr(0, identity.rfind(':'));
  s.path = concat(folder, "/rank-", rank, ".", host, ".", getpid(), ".json");
  if (!make_folder(folder) || (s.file = std::fopen(s.path.c_str(), "w")) == nullptr) {
    log::warn("TUTTI_TRACE: cannot write ", s.path, ": ", std::strerror(errno),
              "; this process runs untraced (set TUTTI_TRACE to a folder it can write)");
    return false;
  }
  s.pid = rank;
  // A first measure of the stamps' rate, over 2 ms; each drain refines it.
  const ClockReading epoch = read_clocks(true);
  s.stamp0 = epoch.stamp;
  s.monotonic0 = epoch.monotonic_ns;
  const int64_t epoch_us = epoch.wall_ns / 1000;
  s.epoch_fraction_us = static_cast<double>(epoch.wall_ns % 1000) / 1000;
  while (detail::monotonic_ns() - s.monotonic0 < 2'000'000) {
  }
  const ClockReading later = read_clocks(false);
  s.ns_per_stamp.store(static_cast<double>(later.monotonic_ns - s.monotonic0) /
                       static_cast<double>(later.stamp - s.stamp0));
  s.buffer = "{\"traceEvents\":[\n";
  std::string name;
  append_json_string(concat("rank ", rank, " (", identity, ")"), &name);
  add_metadata_locked(s, kControlTrack, "process_name", concat("\"name\":", name));
  add_metadata_locked(s, kControlTrack, "process_sort_index", concat("\"sort_index\":", rank));
  std::string host_json;
  append_json_string(host, &host_json);
  add_metadata_locked(
      s, kControlTrack, "tutti_epoch",
      concat("\"epoch_us\":", epoch_us, ",\"rank\":", rank, ",\"host\":", host_json, ",\"pid\":", getpid()));
  add_metadata_locked(s, kControlTrack, "thread_name", "\"name\":\"control\"");
  add_metadata_locked(s, kControlTrack, "thread_sort_index", "\"sort_index\":0");
  add_metadata_locked(s, kHealthTrack, "thread_name", "\"name\":\"health\"");
  add_metadata_locked(s, kHealthTrack, "thread_sort_index", "\"sort_index\":1");
  write_out_locked(s);
  detail::on.store(true, std::memory_order_release);
  static std::once_flag finish_at_exit;  // once: a forked child that traces again inherits it
  std::call_once(finish_at_exit, [] { std::atexit(finish); });
  return true;
}

int add_track(const std::string& name) {
  if (!on()) return kControlTrack;
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  int track = s.next_track++;
  std::string quoted;
  append_json_string(name, &quoted);
  add_metadata_locked(s, track, "thread_name", concat("\"name\":", quoted));
  add_metadata_locked(s, track, "thread_sort_index", concat("\"sort_index\":", track));
  return track;
}

void record(const Event& event) {
  ThreadState& state = own_state();
  Ring& ring = *state.ring;
  const uint64_t head = ring.head.load(std::memory_order_relaxed);
  if (dropping(event, head - ring.tail.load(std::memory_order_acquire), state)) [[unlikely]] {
    dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ring.slots[head % kRingEvents] = event;
  ring.head.store(head + 1, std::memory_order_release);
}

void record(const Event& event, const std::string& text) {
  if (text.empty()) return record(event);
  ThreadState& state = own_state();
  Ring& ring = *state.ring;
  if (dropping(event, 0, state)) return;  // only the end of a dropped begin
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.file == nullptr) return;
  recalibrate_locked(s);
  drain_locked(s, ring);  // this thread's earlier events first
  add_event_locked(s, event, text);
}

void instant(int track, const char* name, const char* cat, const std::string& text) {
  if (!on()) return;
  Event event;
  event.phase = Phase::kInstant;
  event.stamp = stamp();
  event.track = static_cast<int16_t>(track);
  event.name = name;
  event.cat = cat;
  record(event, text);
}

void clock_sample(double offset_us, double rtt_us) {
  if (!on()) return;
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  char args[96];
  std::snprintf(args, sizeof args, "\"offset_us\":%.3f,\"rtt_us\":%.3f", offset_us, rtt_us);
  add_metadata_locked(s, kControlTrack, "tutti_clock", args);
}

double micros_between(uint64_t from, uint64_t to) {
  return static_cast<double>(static_cast<int64_t>(to - from)) * session().ns_per_stamp.load() / 1000;
}

void flush() {
  if (!on()) return;
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  recalibrate_locked(s);
  for (auto& ring : s.rings) drain_locked(s, *ring);
  // The rings of threads that ended are empty now, and no one else holds them.
  std::erase_if(s.rings, [](const std::shared_ptr<Ring>& ring) { return ring.use_count() == 1; });
  write_out_locked(s);
}

void finish() {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.file == nullptr) return;
  detail::on.store(false, std::memory_order_release);
  recalibrate_locked(s);
  for (auto& ring : s.rings) drain_locked(s, *ring);
  const uint64_t lost = dropped.load();
  add_metadata_locked(s, kControlTrack, "tutti_trace_end", concat("\"dropped\":", lost));
  s.buffer += "],\"displayTimeUnit\":\"ms\"}\n";
  write_out_locked(s);
  std::fclose(s.file);
  s.file = nullptr;
  if (lost > 0) {
    log::warn("TUTTI_TRACE: ", lost, " events of ", s.path,
              " were dropped: this rank recorded faster than its event loop wrote them (at each heartbeat, ",
              kRingEvents, " events per thread at most); the operations around them are in the trace");
  }
}

}  // namespace tutti::trace
