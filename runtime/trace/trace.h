// TUTTI_TRACE=DIR: every process writes what it does to DIR/rank-<R>.<host>.<pid>.json,
// in the Chrome trace format that chrome://tracing, Perfetto and `tutti trace` read
// (docs/trace.md): its collectives and point-to-point operations on a track per
// communicator, and its control plane (init, meetings, store requests, heartbeats,
// losses, aborts, shrinks) on track 0.
//
// Recording never waits on the file: each thread appends to a ring of its own, and the
// event loop drains the rings to the file (flush) at each heartbeat (health/monitor.h)
// and as a communicator ends. A thread that fills its ring between two flushes drains
// it itself, so memory stays bounded and nothing is dropped. With tracing off, a record
// site costs one relaxed load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/common/error.h"
#include "runtime/trace/event.h"

namespace tutti::trace {

namespace detail {
extern std::atomic<bool> on;
}  // namespace detail

inline bool on() { return detail::on.load(std::memory_order_relaxed); }

// The clock of every event: monotonic nanoseconds.
int64_t now_ns();

// Starts this process's trace if TUTTI_TRACE names a folder, as rank `rank` (of its
// first world) of identity "host:pid"; later calls do nothing. A folder that cannot be
// written is one warning, and the process runs untraced. Returns on().
bool start(int rank, const std::string& identity);

// A track for a communicator, named for people ("world", "split #1 (color 0) of world").
// 0 when tracing is off.
int add_track(const std::string& name);

// Queues event on this thread's ring. Call only when on().
void record(Event&& event);

// A moment: a loss, an abort, a late heartbeat. Does nothing when tracing is off.
void instant(int track, const char* name, const char* cat, std::string text);

// Runs fn as a span named name on track (the control plane's steps: init, a meeting, a
// split, a shrink), ended with the status of the Error it throws, if it throws.
template <typename Fn>
auto span(const char* name, int track, Fn&& fn) -> decltype(fn()) {
  if (!on()) return fn();
  Event begin;
  begin.phase = Phase::kBegin;
  begin.ts_ns = now_ns();
  begin.track = track;
  begin.name = name;
  begin.cat = "control";
  record(std::move(begin));
  Event end;
  end.phase = Phase::kEnd;
  end.track = track;
  end.cat = "control";
  try {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      end.ts_ns = now_ns();
      end.status = Status::kOk;
      record(std::move(end));
    } else {
      auto result = fn();
      end.ts_ns = now_ns();
      end.status = Status::kOk;
      record(std::move(end));
      return result;
    }
  } catch (const Error& error) {
    end.ts_ns = now_ns();
    end.status = error.status();
    end.text = error.what();
    record(std::move(end));
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

}  // namespace tutti::trace
