// An event as one line of the trace file: a Chrome trace JSON object (docs/trace.md).
#pragma once

#include <string>

#include "runtime/trace/event.h"

namespace tutti::trace {

// Appends event as a JSON object for process (rank) pid, with its time and length
// already in microseconds (ts since the process's epoch), and text ("" for none) as
// its error (when it failed) or detail.
void append_json(const Event& event, int pid, double ts_us, double length_us, const std::string& text,
                 std::string* out);

// Appends text as a JSON string, quotes included.
void append_json_string(const std::string& text, std::string* out);

}  // namespace tutti::trace
