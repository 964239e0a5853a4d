#include "runtime/trace/trace.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/log.h"
#include "runtime/common/settings.h"
#include "runtime/trace/event_json.h"

namespace tutti::trace {
namespace detail {
std::atomic<bool> on{false};
}  // namespace detail

namespace {

constexpr size_t kRingEvents = 4096;

// One thread's events, written by that thread only (head) and read under the
// session's mutex (tail): a single-producer ring without locks on the producer's side.
struct Ring {
  Event slots[kRingEvents];
  std::atomic<uint64_t> head{0};
  std::atomic<uint64_t> tail{0};
};

struct Session {
  std::mutex mutex;  // everything below, and the rings' tails
  bool started = false;
  FILE* file = nullptr;
  std::string path;
  int pid = 0;  // the rank: one Chrome trace "process" per rank
  int64_t epoch_ns = 0;
  int next_track = kHealthTrack + 1;
  std::vector<std::shared_ptr<Ring>> rings;
  std::string buffer;
  bool first_line = true;
  uint64_t self_drains = 0;  // rings drained by their own thread, full between flushes
};

// Never destroyed: threads may still record while the process exits.
Session& session() {
  static Session* instance = new Session();
  return *instance;
}

thread_local std::shared_ptr<Ring> t_ring;

Ring& own_ring() {
  if (!t_ring) {
    t_ring = std::make_shared<Ring>();
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.rings.push_back(t_ring);
  }
  return *t_ring;
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

void drain_locked(Session& s, Ring& ring) {
  uint64_t tail = ring.tail.load(std::memory_order_relaxed);
  const uint64_t head = ring.head.load(std::memory_order_acquire);
  std::string line;
  for (; tail != head; ++tail) {
    Event& event = ring.slots[tail % kRingEvents];
    line.clear();
    append_json(event, s.pid, s.epoch_ns, &line);
    add_line_locked(s, line);
    event.text.clear();
  }
  ring.tail.store(tail, std::memory_order_release);
}

void write_out_locked(Session& s) {
  if (s.file == nullptr || s.buffer.empty()) return;
  std::fwrite(s.buffer.data(), 1, s.buffer.size(), s.file);
  std::fflush(s.file);
  s.buffer.clear();
}

bool make_folder(const std::string& path) {
  std::string partial;
  for (size_t at = 0; at != std::string::npos;) {
    at = path.find('/', at + 1);
    partial = path.substr(0, at);
    if (!partial.empty() && mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  return true;
}

int64_t wall_us() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
}

}  // namespace

int64_t now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

bool start(int rank, const std::string& identity) {
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.started) return on();
  s.started = true;
  std::string folder = settings::text("TUTTI_TRACE").value_or("");
  if (folder.empty()) return false;
  std::string host = identity.substr(0, identity.rfind(':'));
  s.path = concat(folder, "/rank-", rank, ".", host, ".", getpid(), ".json");
  if (!make_folder(folder) || (s.file = std::fopen(s.path.c_str(), "w")) == nullptr) {
    log::warn("TUTTI_TRACE: cannot write ", s.path, ": ", std::strerror(errno),
              "; this process runs untraced (set TUTTI_TRACE to a folder it can write)");
    return false;
  }
  s.pid = rank;
  s.epoch_ns = now_ns();
  const int64_t epoch_us = wall_us();
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
  std::atexit(finish);
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

void record(Event&& event) {
  Ring& ring = own_ring();
  const uint64_t head = ring.head.load(std::memory_order_relaxed);
  if (head - ring.tail.load(std::memory_order_acquire) >= kRingEvents) [[unlikely]] {
    Session& s = session();
    std::lock_guard<std::mutex> lock(s.mutex);
    drain_locked(s, ring);
    ++s.self_drains;
  }
  ring.slots[head % kRingEvents] = std::move(event);
  ring.head.store(head + 1, std::memory_order_release);
}

void instant(int track, const char* name, const char* cat, std::string text) {
  if (!on()) return;
  Event event;
  event.phase = Phase::kInstant;
  event.ts_ns = now_ns();
  event.track = track;
  event.name = name;
  event.cat = cat;
  event.text = std::move(text);
  record(std::move(event));
}

void clock_sample(double offset_us, double rtt_us) {
  if (!on()) return;
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
  char args[96];
  std::snprintf(args, sizeof args, "\"offset_us\":%.3f,\"rtt_us\":%.3f", offset_us, rtt_us);
  add_metadata_locked(s, kControlTrack, "tutti_clock", args);
}

void flush() {
  if (!on()) return;
  Session& s = session();
  std::lock_guard<std::mutex> lock(s.mutex);
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
  for (auto& ring : s.rings) drain_locked(s, *ring);
  add_metadata_locked(s, kControlTrack, "tutti_trace_end", concat("\"self_drains\":", s.self_drains));
  s.buffer += "],\"displayTimeUnit\":\"ms\"}\n";
  write_out_locked(s);
  std::fclose(s.file);
  s.file = nullptr;
}

}  // namespace tutti::trace
