// The operation history (runtime/health/op_history.h): the ring of the last kCapacity
// operations, oldest first, what each line of format() says in each state, updates
// for an operation the ring no longer holds, and readers that copy records while the
// running thread writes them.
#include <criterion/criterion.h>

#include <atomic>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/health/op_history.h"

using tutti::coarse_now_ms;
using tutti::Status;
using tutti::health::OpFacts;
using tutti::health::OpHistory;
using tutti::health::OpRecord;

namespace {

constexpr uint32_t kCapacity = OpHistory::kCapacity;

OpFacts facts(const char* name, const char* dtype, const char* op, uint64_t count, int root) {
  OpFacts f;
  f.name = name;
  f.dtype = dtype;
  f.op = op;
  f.count = count;
  f.root = root;
  return f;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The duration written right after `marker` in line ("250 ms", "1.5 s"), in ms; -1 if none.
double ms_after(const std::string& line, const std::string& marker) {
  size_t at = line.find(marker);
  if (at == std::string::npos) return -1;
  double value = 0;
  char unit[3] = {0};
  if (sscanf(line.c_str() + at + marker.size(), "%lf %2[ms]", &value, unit) != 2) return -1;
  return std::string(unit) == "s" ? value * 1000 : value;
}

// The reading of a duration that ended `ms` ago, given the time the test itself took to
// get there: at least ms (to format()'s rounding to 0.1 s), and not seconds more.
void expect_elapsed(const std::string& line, const std::string& marker, double ms) {
  double got = ms_after(line, marker);
  double rounding = ms >= 1000 ? 50 : 0;
  cr_expect(got >= ms - rounding && got <= ms + 2000, "after \"%s\": expected about %.0f ms in: %s", marker.c_str(), ms,
            line.c_str());
}

}  // namespace

Test(op_history, empty_history_says_so) {
  OpHistory history;
  cr_assert(history.recent().empty());
  cr_assert_eq(history.format(), "  (no collective yet)\n");
}

// One operation through its life: issued (queued), started, finished; and a blocking
// one, running as it is issued.
Test(op_history, records_follow_an_operation_through_its_states) {
  OpHistory history;
  history.issued(7, facts("reduce", "float64", "max", 12, 2), 1000, false);
  auto records = history.recent();
  cr_assert_eq(records.size(), 1u);
  OpRecord r = records[0];
  cr_expect_eq(r.seq, 7u);
  cr_expect_str_eq(r.facts.name, "reduce");
  cr_expect_str_eq(r.facts.dtype, "float64");
  cr_expect_str_eq(r.facts.op, "max");
  cr_expect_eq(r.facts.count, 12u);
  cr_expect_eq(r.facts.root, 2);
  cr_expect(r.state == OpRecord::State::kQueued);
  cr_expect(r.issued_ms == 1000 && r.started_ms == 0 && r.finished_ms == 0);

  history.started(7, 1100);
  r = history.recent().at(0);
  cr_expect(r.state == OpRecord::State::kRunning);
  cr_expect(r.issued_ms == 1000 && r.started_ms == 1100 && r.finished_ms == 0);

  history.finished(7, Status::kMismatch, 1300);
  r = history.recent().at(0);
  cr_expect(r.state == OpRecord::State::kFailed);
  cr_expect(r.status == Status::kMismatch);
  cr_expect(r.issued_ms == 1000 && r.started_ms == 1100 && r.finished_ms == 1300);

  history.issued(8, facts("barrier", "", "", 0, -1), 2000, true);
  r = history.recent().at(1);
  cr_expect_eq(r.seq, 8u);
  cr_expect(r.state == OpRecord::State::kRunning, "a blocking operation starts as it is issued");
  cr_expect(r.started_ms == 2000 && r.finished_ms == 0);
  history.finished(8, Status::kOk, 2004);
  r = history.recent().at(1);
  cr_expect(r.state == OpRecord::State::kDone && r.status == Status::kOk && r.finished_ms == 2004);
}

Test(op_history, format_writes_one_line_per_operation_in_each_state) {
  OpHistory history;
  int64_t now = coarse_now_ms();
  history.issued(1, facts("all_reduce", "float32", "sum", 1024, -1), now - 9000, true);
  history.finished(1, Status::kOk, now - 8750);
  history.issued(2, facts("broadcast", "float32", "", 8, 3), now - 5000, false);
  history.started(2, now - 4000);
  history.finished(2, Status::kTimeout, now - 1000);
  history.issued(3, facts("barrier", "", "", 0, -1), now - 2000, false);
  history.started(3, now - 1500);
  history.issued(4, facts("all_gather", "uint8", "", 16, -1), now - 700, false);

  auto lines = lines_of(history.format());
  cr_assert_eq(lines.size(), 4u, "%s", history.format().c_str());
  cr_expect_eq(lines[0].rfind("  #1 all_reduce float32 x 1024 sum: done in 250 ms, ", 0), 0u, "%s", lines[0].c_str());
  expect_elapsed(lines[0], "done in 250 ms, ", 8750);
  cr_expect(lines[0].size() > 4 && lines[0].substr(lines[0].size() - 4) == " ago", "%s", lines[0].c_str());
  cr_expect_eq(lines[1].rfind("  #2 broadcast float32 x 8 root 3: failed (TIMEOUT) after 3 s, ", 0), 0u, "%s",
               lines[1].c_str());
  expect_elapsed(lines[1], "after 3 s, ", 1000);
  cr_expect_eq(lines[2].rfind("  #3 barrier: running for ", 0), 0u, "%s", lines[2].c_str());
  expect_elapsed(lines[2], "running for ", 1500);
  cr_expect_eq(lines[3].rfind("  #4 all_gather uint8 x 16: queued for ", 0), 0u, "%s", lines[3].c_str());
  expect_elapsed(lines[3], "queued for ", 700);
}

// After more operations than it holds, the ring keeps the last kCapacity, oldest first,
// each with its own facts.
Test(op_history, ring_keeps_the_last_operations_in_order) {
  OpHistory history;
  const uint32_t total = 3 * kCapacity + 5;
  for (uint32_t seq = 1; seq <= total; ++seq) {
    history.issued(seq, facts("all_reduce", "int32", "sum", seq * 10, -1), seq, true);
    history.finished(seq, Status::kOk, seq + 1);
  }
  auto records = history.recent();
  cr_assert_eq(records.size(), kCapacity);
  for (uint32_t i = 0; i < kCapacity; ++i) {
    uint32_t seq = total - kCapacity + 1 + i;
    cr_assert_eq(records[i].seq, seq, "record %u is #%u", i, records[i].seq);
    cr_assert_eq(records[i].facts.count, seq * 10u);
    cr_assert(records[i].state == OpRecord::State::kDone && records[i].issued_ms == seq);
  }
  auto lines = lines_of(history.format());
  cr_assert_eq(lines.size(), kCapacity);
  cr_expect_eq(lines.front().rfind("  #" + std::to_string(total - kCapacity + 1) + " all_reduce int32 x ", 0), 0u, "%s",
               lines.front().c_str());
  cr_expect_eq(lines.back().rfind("  #" + std::to_string(total) + " all_reduce int32 x ", 0), 0u, "%s",
               lines.back().c_str());
}

// More operations queued than the ring holds: the oldest one's slot went to a newer
// one, whose record its start and end must not touch.
Test(op_history, updates_for_an_overwritten_operation_are_dropped) {
  OpHistory history;
  history.issued(5, facts("gather", "uint8", "", 4, 0), 100, false);
  history.issued(5 + kCapacity, facts("scatter", "uint8", "", 4, 1), 200, false);
  history.started(5, 300);
  history.finished(5, Status::kOk, 400);
  auto records = history.recent();
  cr_assert_eq(records.size(), 1u);
  cr_expect_eq(records[0].seq, 5 + kCapacity);
  cr_expect_str_eq(records[0].facts.name, "scatter");
  cr_expect(records[0].state == OpRecord::State::kQueued);
  cr_expect(records[0].started_ms == 0 && records[0].finished_ms == 0);
  history.started(5 + kCapacity, 500);
  cr_expect(history.recent().at(0).state == OpRecord::State::kRunning && history.recent().at(0).started_ms == 500);
}

// A reader on another thread never sees a record mixed from two writes: every field of
// every record it gets agrees with its seq, whatever the running thread is writing.
Test(op_history, readers_see_whole_records_while_the_running_thread_writes, .timeout = 60) {
  static const char* const kNames[] = {"all_reduce", "broadcast", "all_to_all"};
  static const char* const kDtypes[] = {"float32", "int8", "bfloat16"};
  OpHistory history;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> last{0};
  std::thread writer([&] {
    for (uint32_t seq = 1; !stop; ++seq) {
      history.issued(seq, facts(kNames[seq % 3], kDtypes[seq % 3], seq % 2 ? "sum" : "", seq * 3, int(seq % 5)), seq,
                     false);
      history.started(seq, seq + 1);
      history.finished(seq, seq % 7 ? Status::kOk : Status::kMismatch, seq + 2);
      last = seq;
    }
  });
  while (last == 0) std::this_thread::yield();
  uint64_t checked = 0;
  std::string bad;
  for (int round = 0; round < 3000 && bad.empty(); ++round) {
    auto records = history.recent();
    if (records.size() > kCapacity) bad = "more records than the ring holds";
    for (size_t i = 0; i < records.size() && bad.empty(); ++i) {
      const OpRecord& r = records[i];
      uint32_t s = r.seq;
      bool facts_agree = std::string(r.facts.name) == kNames[s % 3] && std::string(r.facts.dtype) == kDtypes[s % 3] &&
                         std::string(r.facts.op) == (s % 2 ? "sum" : "") && r.facts.count == s * 3ull &&
                         r.facts.root == int(s % 5) && r.issued_ms == s;
      bool times_agree = false;
      switch (r.state) {
        case OpRecord::State::kQueued: times_agree = r.started_ms == 0 && r.finished_ms == 0; break;
        case OpRecord::State::kRunning: times_agree = r.started_ms == s + 1 && r.finished_ms == 0; break;
        case OpRecord::State::kDone:
          times_agree = s % 7 != 0 && r.status == Status::kOk && r.finished_ms == s + 2;
          break;
        case OpRecord::State::kFailed:
          times_agree = s % 7 == 0 && r.status == Status::kMismatch && r.finished_ms == s + 2;
          break;
      }
      if (i > 0 && records[i - 1].seq >= s) bad = "records out of order";
      if (!facts_agree || !times_agree) bad = "a torn record, #" + std::to_string(s);
      ++checked;
    }
  }
  stop = true;
  writer.join();
  cr_assert(bad.empty(), "%s", bad.c_str());
  cr_assert_gt(checked, 0u);
  auto records = history.recent();
  cr_assert_eq(records.size(), kCapacity);
  cr_assert_eq(records.back().seq, last.load());
  cr_assert(records.back().state == OpRecord::State::kDone || records.back().state == OpRecord::State::kFailed);
}
