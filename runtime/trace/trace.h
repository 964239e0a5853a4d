// TUTTI_TRACE=DIR: every process writes what it does to DIR/rank-<R>.<host>.<pid>.json,
// in the Chrome trace format that chrome://tracing, Perfetto and `tutti trace` read
// (docs/trace.md): its collectives, sends, receives and waits on a track per
// communicator, and its control plane (init, meetings, store requests, heartbeats,
// losses, aborts, splits, shrinks) on tracks 0 and 1.
//
// Recording never waits on the file, nor formats anything: each thread copies its
// events into a ring of its own, and the event loop drains the rings to the file
// (flush) at each heartbeat (health/monitor.h) and as a communicator ends. A ring that
// fills between two drains drops whole operations (begin and end alike, so that the
// file still pairs them), counts them, and the process says so as it ends: memory stays
// bounded and the hot path never slows. With tracing off, a record site costs one
// relaxed load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/common/error.h"
#include "runtime/trace/event.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace tutti::trace {

namespace detail {
extern std::atomic<bool> on;
uint64_t monotonic_ns();
}  // namespace detail

inline bool on() { return detail::on.load(std::memory_order_relaxed); }

// The clock of every event: the processor's time-stamp counter where there is one (a
// third of a clock_gettime), monotonic nanoseconds elsewhere. The writer turns stamps
// into time.
inline uint64_t stamp() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return detail::monotonic_ns();
#endif
}

// Starts this process's trace if TUTTI_TRACE, else configured, names a folder, as rank
// `rank` (of its first world) of identity "host:pid"; later calls do nothing (but in a
// forked child, which forgets its parent's trace: its first call starts its own). A folder
// that cannot be written is one warning, and the process runs untraced. Returns on().
bool start(int rank, const std::string& identity, const std::string& configured = "");

// A track for a communicator, named for people ("world", "world.split0.color1").
// kControlTrack when tracing is off.
int add_track(const std::string& name);

// Queues event on this thread's ring. Call only when on().
void record(const Event& event);
// The same for an event that carries text (an error, a loss's reason, a store
// request's keys): written at once, under the writer's lock; failure paths and the
// control plane only. Empty text takes the ring, as record(event) does.
void record(const Event& event, const std::string& text);

// A moment: a loss, an abort, a late heartbeat. Does nothing when tracing is off.
void instant(int track, const char* name, const char* cat, const std::string& text);

// Runs fn as a span named name on track (the control plane's steps: init, a meeting, a
// split, a shrink), ended with the status of the Error it throws, if it throws.
template <typename Fn>
auto span(const char* name, int track, Fn&& fn) -> decltype(fn()) {
  if (!on()) return fn();
  Event event;
  event.phase = Phase::kBegin;
  event.stamp = stamp();
  event.track = static_cast<int16_t>(track);
  event.name = name;
  event.cat = "control";
  record(event);
  event.phase = Phase::kEnd;
  try {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      event.stamp = stamp();
      event.ended(Status::kOk);
      record(event);
    } else {
      auto result = fn();
      event.stamp = stamp();
      event.ended(Status::kOk);
      record(event);
      return result;
    }
  } catch (const Error& error) {
    event.stamp = stamp();
    event.ended(error.status());
    record(event, error.what());
    throw;
  }
}

// How this process's clock relates to the store's: offset_us added to this process's
// wall clock gives the store's, measured over a round trip of rtt_us. `tutti trace
// merge` aligns each rank's events by its best sample (the smallest round trip).
void clock_sample(double offset_us, double rtt_us);

// Writes what the rings hold to the file. Any thread.
void flush();

// Flushes and ends the file (its closing lines); at exit, and for tests.
void finish();

// The microseconds between two stamps, for code that reports a span's length.
double micros_between(uint64_t from, uint64_t to);

}  // namespace tutti::trace
