// A merged trace as something to draw: tracks (a rank's control track and its
// communicators), the operations on them as spans with a start and an end, and the
// instants (a rank lost). The terminal view and the page both draw this, so that the
// pairing of B with E and b with e is done once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "observe/operation_style.h"

namespace tutti::observe {

struct Track {
  int rank = 0;
  int64_t tid = 0;
  std::string name;  // thread_name metadata: "control", "world", "split 1 of world"
};

struct Span {
  size_t track = 0;
  double start_us = 0;
  double end_us = 0;
  int depth = 0;  // how many spans of its track it lies within
  std::string name;
  std::string category;
  std::string label;   // "all_reduce #42": the name, and the seq argument where there is one
  std::string status;  // "OK", a status name, "UNFINISHED", or "" when none was written
  std::string error;
  nlohmann::ordered_json args;  // the opening event's, then the closing one's
  const OperationStyle* style = nullptr;
  bool failed() const { return !status.empty() && status != "OK"; }
};

struct Instant {
  size_t track = 0;
  double ts_us = 0;
  std::string name;
  std::string category;
  std::string detail;  // the args as "key=value, ..."
  nlohmann::ordered_json args;
};

struct Timeline {
  std::vector<Track> tracks;  // by rank, then tid
  std::vector<Span> spans;    // by start
  std::vector<Instant> instants;
  double end_us = 0;  // the last end or instant
};

// events: a merged trace's traceEvents (trace_merge.h). Unmatched E and e events are
// ignored, and an unclosed B or b ends at the trace's end.
Timeline build_timeline(const nlohmann::ordered_json& events);

}  // namespace tutti::observe
