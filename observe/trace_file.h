// Reading one trace file (docs/trace.md; the format's contract is in the header of
// trace_file.cc): a per-rank file the runtime writes, possibly cut short by a crash, or a
// merged one. A cut-short file keeps every event it finished writing.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

namespace tutti::observe {

struct TraceFile {
  std::filesystem::path path;
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  // A merged file's "otherData" (trace_merge.h), null for a per-rank file.
  nlohmann::ordered_json other_data;
  // The closing line is missing: the writing process did not exit cleanly.
  bool cut_short = false;
  // Its last line was an event cut off mid-way, and was dropped.
  bool partial_line_dropped = false;
};

// Throws std::runtime_error, naming the file (and the line), when it cannot be read or
// is not a trace: only the very last line may be broken.
TraceFile read_trace_file(const std::filesystem::path& path);

}  // namespace tutti::observe
