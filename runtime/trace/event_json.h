// An event as one line of the trace file: a Chrome trace JSON object (docs/trace.md).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/trace/event.h"

namespace tutti::trace {

// Appends event as a JSON object for process (rank) pid, its ts in microseconds since
// epoch_ns (on now_ns()'s clock).
void append_json(const Event& event, int pid, int64_t epoch_ns, std::string* out);

// Appends text as a JSON string, quotes included.
void append_json_string(const std::string& text, std::string* out);

}  // namespace tutti::trace
