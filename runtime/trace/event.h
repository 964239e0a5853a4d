// One trace event, as the running code records it: plain fields and static strings, so
// that recording one is a clock read and a copy into a per-thread ring (trace.h). The
// text of an error, a loss or a store request's keys, the only string that is not
// static, goes with the event on a slower path (record with text, in trace.h).
#pragma once

#include <cstdint>

#include "runtime/common/status.h"

namespace tutti::trace {

// Chrome trace phases (docs/trace.md): a span's begin and end on one track, a span
// recorded whole, a moment, and an asynchronous span that may overlap others.
enum class Phase : char {
  kBegin = 'B',
  kEnd = 'E',
  kComplete = 'X',
  kInstant = 'i',
  kAsyncBegin = 'b',
  kAsyncEnd = 'e',
};

// Track 0 is the process's control plane as its user's threads meet it (init, meetings,
// store requests, splits, shrinks, aborts); track 1 what the event loop sees
// (heartbeats, losses); each communicator has a track of its own (add_track in trace.h).
constexpr int kControlTrack = 0;
constexpr int kHealthTrack = 1;

struct Event {
  uint64_t stamp = 0;   // stamp() (trace.h) when it happened, or began (kComplete)
  uint64_t length = 0;  // kComplete: its length, in stamps
  const char* name = "";
  const char* cat = "";  // collective, p2p, wait, control, store, health
  // Arguments, written when set (>= 0, non-null).
  const char* dtype = nullptr;
  const char* op = nullptr;
  const char* algorithm = nullptr;
  const char* transport = nullptr;
  int64_t seq = -1;
  int64_t bytes = -1;
  int64_t count = -1;
  int64_t id = -1;  // kAsyncBegin/kAsyncEnd
  int32_t root = -1;
  int32_t peer = -1;
  int32_t tag = -1;
  int16_t track = kControlTrack;
  Phase phase = Phase::kInstant;
  bool has_status = false;  // how an operation ended: status
  Status status = Status::kOk;

  void ended(Status how) {
    has_status = true;
    status = how;
  }
};

}  // namespace tutti::trace
