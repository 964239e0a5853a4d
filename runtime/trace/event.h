// One trace event, as the running code records it: fixed fields and static strings, so
// that recording one is a few stores into a per-thread ring (recorder.h); the text of
// an error or a loss, the only string that is not static, is set on failure paths only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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
  int64_t ts_ns = 0;   // now_ns() (trace.h)
  int64_t dur_ns = 0;  // kComplete
  const char* name = "";
  const char* cat = "";  // collective, p2p, wait, control, store, health
  int track = kControlTrack;
  Phase phase = Phase::kInstant;
  // Arguments, written when set (>= 0, non-null).
  int64_t seq = -1;
  int64_t bytes = -1;
  int64_t count = -1;
  int32_t root = -1;
  int32_t peer = -1;
  int32_t tag = -1;
  int64_t id = -1;  // kAsyncBegin/kAsyncEnd
  const char* dtype = nullptr;
  const char* op = nullptr;
  const char* algorithm = nullptr;
  const char* transport = nullptr;
  std::optional<Status> status;  // how an operation ended
  std::string text;              // an error, a loss's reason, a store request's keys
};

}  // namespace tutti::trace
