// merge_traces and merge_trace_directory on tests/observe/data/job: four ranks with
// clock offsets, rank 3 cut short inside all_reduce #42.
#include <criterion/criterion.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "observe/rank_clock.h"
#include "observe/trace_file.h"
#include "observe/trace_merge.h"

using nlohmann::ordered_json;
using tutti::observe::merge_trace_directory;
using tutti::observe::merge_traces;
using tutti::observe::MergedTrace;
using tutti::observe::read_trace_file;

static const std::filesystem::path kJob = TUTTI_OBSERVE_DATA_DIR "/job";

static MergedTrace merged_job() {
  std::vector<tutti::observe::TraceFile> files;
  for (int rank = 0; rank < 4; ++rank) {
    const char* names[] = {"rank-0.h0.100.json", "rank-1.h0.101.json", "rank-2.h1.200.json", "rank-3.h1.201.json"};
    files.push_back(read_trace_file(kJob / names[rank]));
  }
  return merge_traces(std::move(files));
}

// The first event of rank's track tid with this phase and seq.
static const ordered_json& find(const ordered_json& events, int rank, int tid, const char* phase, int seq) {
  for (const auto& event : events) {
    if (event["pid"] == rank && event["tid"] == tid && event["ph"] == phase &&
        (seq < 0 || event["args"].value("seq", -1) == seq)) {
      return event;
    }
  }
  cr_assert_fail("no %s event with seq %d on rank %d tid %d", phase, seq, rank, tid);
  static ordered_json none;
  return none;
}

Test(trace_merge, places_each_rank_on_the_store_clock) {
  const ordered_json events = merged_job().trace["traceEvents"];
  // Global time is epoch + best offset + ts; rank 0's store GET (its ts 10) is first.
  cr_assert_eq(find(events, 0, 0, "X", -1)["ts"].get<double>(), 0.0);
  // Rank 1: epoch +1000 us, best offset -500 (rtt 30, not the 9999 of rtt 300), taken
  // as -485 (the end of its +-15 nearest zero), ts 0.
  cr_assert_eq(find(events, 1, 1, "B", 41)["ts"].get<double>(), 1000 - 485 + 0 - 10);
  // Rank 2: epoch +2000, no tutti_clock (offset 0), ts 2700 on its second communicator.
  cr_assert_eq(find(events, 2, 2, "B", 1)["ts"].get<double>(), 2000 + 2700 - 10);
  // Rank 3: epoch +3000, offset 250.25 over a round trip of 15 (242.75), ts 300.
  cr_assert_eq(find(events, 3, 1, "B", 42)["ts"].get<double>(), 3000 + 242.75 + 300 - 10);
}

// One rank's metadata: its epoch and clock samples (offset, round trip; a negative
// round trip: a sample without one).
ordered_json clock_events(const std::vector<std::pair<double, double>>& samples) {
  ordered_json events = ordered_json::array();
  events.push_back({{"ph", "M"}, {"name", "tutti_epoch"}, {"pid", 0}, {"args", {{"epoch_us", 1000}}}});
  for (auto [offset, rtt] : samples) {
    ordered_json args = {{"offset_us", offset}};
    if (rtt >= 0) args["rtt_us"] = rtt;
    events.push_back({{"ph", "M"}, {"name", "tutti_clock"}, {"pid", 0}, {"args", args}});
  }
  return events;
}

Test(trace_merge, takes_the_offset_nearest_zero_that_the_best_sample_allows) {
  // Within half its round trip of zero: one clock, as on one machine.
  cr_assert_eq(tutti::observe::read_rank_clock(clock_events({{-400, 900}, {6, 20}}))->offset_us, 0.0);
  cr_assert_eq(tutti::observe::read_rank_clock(clock_events({{-8, 20}}))->offset_us, 0.0);
  // Beyond it: moved toward zero by half the round trip.
  cr_assert_eq(tutti::observe::read_rank_clock(clock_events({{-500, 30}}))->offset_us, -485.0);
  cr_assert_eq(tutti::observe::read_rank_clock(clock_events({{1000, 100}, {9999, 300}}))->offset_us, 950.0);
  // A sample without its round trip is taken as it is.
  cr_assert_eq(tutti::observe::read_rank_clock(clock_events({{7, -1}}))->offset_us, 7.0);
}

Test(trace_merge, puts_metadata_first_then_sorts_by_time) {
  const ordered_json events = merged_job().trace["traceEvents"];
  bool timed = false;
  double last = 0;
  for (const auto& event : events) {
    if (event["ph"] == "M") {
      cr_assert(!timed, "metadata after a timed event: %s", event.dump().c_str());
      continue;
    }
    timed = true;
    cr_assert_geq(event["ts"].get<double>(), last, "out of order: %s", event.dump().c_str());
    last = event["ts"].get<double>();
  }
}

Test(trace_merge, closes_what_a_dead_rank_left_open) {
  MergedTrace merged = merged_job();
  const ordered_json& events = merged.trace["traceEvents"];
  std::vector<ordered_json> ends;
  for (const auto& event : events) {
    if (event["pid"] == 3 && event["ph"] == "E") ends.push_back(event);
  }
  cr_assert_eq(ends.size(), 2u);
  const ordered_json& last_end = ends.back();
  cr_assert_eq(last_end["args"]["status"], "UNFINISHED");
  cr_assert_eq(last_end["ts"].get<double>(), 3000 + 242.75 + 300 - 10);  // rank 3's last timestamp
  cr_assert_eq(merged.cut_short, 1u);
  cr_assert_eq(merged.notes.size(), 1u);
  cr_assert_eq(merged.notes[0],
               "rank 3's trace ends at 4 ms: the process did not exit cleanly; 1 operation left open: all_reduce #42");
  const ordered_json& rank3 = merged.trace["otherData"]["tutti"]["ranks"][3];
  cr_assert_eq(rank3["cut_short"], true);
  cr_assert_eq(rank3["offset_us"].get<double>(), 242.75);
  cr_assert_eq(rank3["host"], "h1");
  cr_assert_eq(rank3["pid"], 201);
  cr_assert_eq(rank3["events"], 9);
}

Test(trace_merge, writes_the_folders_timeline) {
  char dir[] = "/tmp/tutti-trace-merge-XXXXXX";
  cr_assert(mkdtemp(dir) != nullptr);
  for (const auto& entry : std::filesystem::directory_iterator(kJob)) {
    std::filesystem::copy_file(entry.path(), std::filesystem::path(dir) / entry.path().filename());
  }
  std::filesystem::copy_file(kJob / "rank-0.h0.100.json", std::filesystem::path(dir) / "notes.json");
  auto report = merge_trace_directory(dir);
  cr_assert_eq(report.output, std::filesystem::path(dir) / "timeline.json");
  cr_assert_eq(report.files, 4u);  // notes.json is no rank file
  // A second merge leaves the first one's timeline.json alone.
  report = merge_trace_directory(dir);
  cr_assert_eq(report.files, 4u);
  const auto merged = read_trace_file(report.output);
  cr_assert(!merged.cut_short);
  cr_assert_eq(merged.other_data["tutti"]["files"], 4);
  std::filesystem::remove_all(dir);
}

Test(trace_merge, refuses_a_folder_without_traces) {
  try {
    merge_trace_directory("/nonexistent-trace-dir");
    cr_assert_fail("merged a missing folder");
  } catch (const std::runtime_error& error) {
    cr_assert(std::string(error.what()).find("cannot read the trace folder /nonexistent-trace-dir") == 0, "%s",
              error.what());
  }
  char dir[] = "/tmp/tutti-trace-empty-XXXXXX";
  cr_assert(mkdtemp(dir) != nullptr);
  try {
    merge_trace_directory(dir);
    cr_assert_fail("merged an empty folder");
  } catch (const std::runtime_error& error) {
    cr_assert(std::string(error.what()).find("holds no rank-*.json trace file") != std::string::npos, "%s",
              error.what());
  }
  std::filesystem::remove_all(dir);
}
