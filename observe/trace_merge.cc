#include "observe/trace_merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "observe/open_operations.h"
#include "observe/rank_clock.h"
#include "observe/trace_writer.h"
#include "runtime/common/concat.h"
#include "runtime/common/duration_text.h"

namespace tutti::observe {
namespace {

using Json = nlohmann::ordered_json;

struct RankInput {
  TraceFile file;
  RankClock clock;
  size_t events_read = 0;
};

// Microseconds to three decimals, as the writer has them: differences of large
// floating-point times leave noise in the last bits.
double to_nanoseconds(double us) { return std::round(us * 1000.0) / 1000.0; }

// The fields every event needs before it can be placed: a phase, integer pid and tid,
// and for every phase but metadata a numeric ts.
void check_placeable(const Json& event, const TraceFile& file, size_t index) {
  auto fail = [&](const char* what) {
    throw std::runtime_error(concat(file.path.string(), ": event ", index + 1, " ", what, ": ", event.dump()));
  };
  if (!event.is_object()) fail("is not an object");
  if (!event.contains("ph") || !event["ph"].is_string()) fail("has no \"ph\" (phase)");
  if (event.contains("pid") && !event["pid"].is_number_integer()) fail("has a \"pid\" that is not an integer");
  if (event.contains("tid") && !event["tid"].is_number_integer()) fail("has a \"tid\" that is not an integer");
  if (event["ph"] != "M" && (!event.contains("ts") || !event["ts"].is_number())) fail("has no numeric \"ts\"");
}

std::string operations_text(const std::vector<std::string>& labels) {
  if (labels.empty()) return "no operation was open";
  std::string text = concat(labels.size(), labels.size() == 1 ? " operation" : " operations", " left open: ");
  for (size_t i = 0; i < labels.size(); ++i) text += (i ? ", " : "") + labels[i];
  return text;
}

Json rank_summary(const RankInput& input, size_t left_open) {
  Json summary = {{"rank", input.clock.rank},
                  {"file", input.file.path.filename().string()},
                  {"host", input.clock.host},
                  {"pid", input.clock.pid},
                  {"offset_us", input.clock.offset_us}};
  if (input.clock.rtt_us) summary["rtt_us"] = *input.clock.rtt_us;
  summary["cut_short"] = input.file.cut_short;
  summary["events"] = input.events_read;
  summary["operations_left_open"] = left_open;
  return summary;
}

}  // namespace

MergedTrace merge_traces(std::vector<TraceFile> files) {
  MergedTrace merged;
  std::vector<RankInput> inputs;
  for (auto& file : files) {
    for (size_t i = 0; i < file.events.size(); ++i) check_placeable(file.events[i], file, i);
    std::optional<RankClock> clock = read_rank_clock(file.events);
    if (!clock) {
      merged.notes.push_back(concat(file.path.string(), " has no tutti_epoch metadata (cut off at its start, or ",
                                    "not a tutti trace): left out"));
      continue;
    }
    const size_t events_read = file.events.size();
    inputs.push_back({std::move(file), *clock, events_read});
  }
  if (inputs.empty()) {
    throw std::runtime_error(
        "no trace file could be placed in time: none has tutti_epoch metadata; are these "
        "trace files a tutti job wrote with TUTTI_TRACE?");
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](auto& a, auto& b) { return a.clock.rank < b.clock.rank; });

  // Times relative to the earliest epoch first: epochs are ~1.7e15 us, where a double
  // no longer holds the writer's nanoseconds.
  int64_t first_epoch = std::numeric_limits<int64_t>::max();
  for (auto& input : inputs) first_epoch = std::min(first_epoch, input.clock.epoch_us);
  double job_start = std::numeric_limits<double>::infinity();
  for (auto& input : inputs) {
    const double base = static_cast<double>(input.clock.epoch_us - first_epoch) + input.clock.offset_us;
    for (auto& event : input.file.events) {
      if (event["ph"] == "M") continue;
      event["ts"] = base + event["ts"].get<double>();
      job_start = std::min(job_start, event["ts"].get<double>());
    }
  }
  if (!std::isfinite(job_start)) job_start = 0;

  Json metadata = Json::array(), timed = Json::array(), ranks = Json::array();
  std::map<int, std::string> file_of_rank;
  for (auto& input : inputs) {
    double rank_end = 0;
    for (auto& event : input.file.events) {
      if (event["ph"] == "M") continue;
      event["ts"] = to_nanoseconds(event["ts"].get<double>() - job_start);
      const double end = event["ts"].get<double>() + (event["ph"] == "X" ? event.value("dur", 0.0) : 0.0);
      rank_end = std::max(rank_end, end);
    }
    OpenOperations open = close_open_operations(input.file.events, rank_end);
    const int rank = input.clock.rank;
    if (input.file.cut_short) {
      ++merged.cut_short;
      merged.notes.push_back(concat("rank ", rank, "'s trace ends at ", duration_text(std::llround(rank_end / 1000)),
                                    ": the process did not exit cleanly; ", operations_text(open.labels)));
    } else if (!open.labels.empty()) {
      merged.notes.push_back(
          concat("rank ", rank, "'s trace is complete but ", operations_text(open.labels), "; closed as UNFINISHED"));
    }
    if (open.stray_ends > 0) {
      merged.notes.push_back(concat(input.file.path.string(), ": ", open.stray_ends,
                                    " E event(s) closed nothing on their track: left out"));
    }
    auto [known, inserted] = file_of_rank.emplace(rank, input.file.path.filename().string());
    if (!inserted) {
      merged.notes.push_back(concat("rank ", rank, " has two files, ", known->second, " and ",
                                    input.file.path.filename().string(), ": does the folder hold two jobs' traces?"));
    }
    for (auto& event : input.file.events) (event["ph"] == "M" ? metadata : timed).push_back(std::move(event));
    for (auto& event : open.closing_events) timed.push_back(std::move(event));
    ranks.push_back(rank_summary(input, open.labels.size()));
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Json& a, const Json& b) { return a["ts"].get<double>() < b["ts"].get<double>(); });
  for (auto& event : timed) metadata.push_back(std::move(event));

  merged.files = inputs.size();
  merged.trace = {{"traceEvents", std::move(metadata)},
                  {"displayTimeUnit", "ms"},
                  {"otherData",
                   {{"tutti",
                     {{"job_start_epoch_us", first_epoch + std::llround(job_start)},
                      {"files", merged.files},
                      {"cut_short", merged.cut_short},
                      {"ranks", std::move(ranks)}}}}}};
  return merged;
}

bool is_rank_file_name(const std::string& name) {
  return name.size() > 10 && name.rfind("rank-", 0) == 0 && name.compare(name.size() - 5, 5, ".json") == 0;
}

MergeReport merge_trace_directory(const std::filesystem::path& dir, std::filesystem::path output) {
  std::error_code error;
  std::filesystem::directory_iterator entries(dir, error);
  if (error) {
    throw std::runtime_error(concat("cannot read the trace folder ", dir.string(), ": ", error.message(),
                                    "; give the folder TUTTI_TRACE named"));
  }
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : entries) {
    if (entry.is_regular_file(error) && is_rank_file_name(entry.path().filename().string())) {
      paths.push_back(entry.path());
    }
  }
  if (paths.empty()) {
    throw std::runtime_error(concat(
        dir.string(), " holds no rank-*.json trace file; run the job with TUTTI_TRACE=", dir.string(), " first"));
  }
  std::sort(paths.begin(), paths.end());
  std::vector<TraceFile> files;
  files.reserve(paths.size());
  for (const auto& path : paths) files.push_back(read_trace_file(path));
  MergedTrace merged = merge_traces(std::move(files));
  if (output.empty()) output = dir / "timeline.json";
  write_text_file(output, trace_text(merged.trace));
  return {output, std::move(merged.notes), merged.files, merged.cut_short};
}

}  // namespace tutti::observe
