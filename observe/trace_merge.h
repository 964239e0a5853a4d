// Merging the per-rank trace files of one job (TUTTI_TRACE=DIR) into one Chrome trace:
// the clocks aligned on the store's, time 0 at the job's first event, operations a dead
// process left open closed as UNFINISHED. `tutti trace merge` calls it, and so does
// `tutti launch` at the end of a traced job.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "observe/trace_file.h"

namespace tutti::observe {

struct MergedTrace {
  // {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{"tutti":{...}}}: pid is the
  // rank, ts microseconds since the job's first event, metadata first, then by ts.
  nlohmann::ordered_json trace;
  // One line per file worth a word: cut short ("rank 3's trace ends at 1.2 s: the
  // process did not exit cleanly; 1 operation left open: all_reduce #42"), skipped, or
  // with a rank another file has too.
  std::vector<std::string> notes;
  size_t files = 0;
  size_t cut_short = 0;
};

// Throws std::runtime_error when no file is usable (none has tutti_epoch metadata) or
// an event lacks what its phase needs.
MergedTrace merge_traces(std::vector<TraceFile> files);

// True for the names the runtime gives its files: rank-<R>.<host>.<pid>.json.
bool is_rank_file_name(const std::string& name);

struct MergeReport {
  std::filesystem::path output;
  std::vector<std::string> notes;
  size_t files = 0;
  size_t cut_short = 0;
};

// Reads every rank-*.json of dir and writes the merged trace to output (default:
// dir/timeline.json). Throws std::runtime_error with a message to show as it is when
// dir cannot be read, holds no rank file, or a file is not a trace.
MergeReport merge_trace_directory(const std::filesystem::path& dir, std::filesystem::path output = {});

}  // namespace tutti::observe
