// What one running operation carries into the algorithm that executes it: its name and
// sequence number on the communicator (for tags and messages), its deadline, the
// communicator's fault (abort, a lost peer), and the communicator's scratch memory.
// Algorithms call check() in every wait loop, so an abort, a lost peer or a passed
// deadline ends them promptly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/common/fault.h"
#include "runtime/operation/scratch.h"

namespace tutti {

struct OpContext {
  const char* name = "";    // "all_reduce", as users spell the call without tutti_
  uint32_t seq = 0;         // this operation's number on its communicator, from 1
  uint16_t call_check = 0;  // the call's folded fingerprint, in every message's Tag::check
  Deadline deadline = Deadline::passed();
  int64_t timeout_ms = 0;  // what deadline was made from, for messages
  // No silent waits: once the operation has waited until next_report_ms (coarse_now_ms
  // time), check() calls report_wait, which says at warn level what it waits for and
  // on whom; then again each time the wait has doubled (10 s, 20 s, 40 s, ...), until
  // it ends or times out. `alarm` is the earlier of that and the deadline, so that a
  // wait loop reads one clock for both. Set by arm_reports; by default (0, nullptr)
  // alarm becomes the deadline at the first check.
  int64_t started_ms = 0;
  mutable int64_t next_report_ms = 0;
  mutable Deadline alarm = Deadline::passed();
  void (*report_wait)(void* engine, const OpContext& context, const char* waiting_for) = nullptr;
  const Fault* fault = nullptr;  // the communicator's
  // "comm \"world\" (rank 1 of 4)", for messages: a view of the communicator's own
  // string, which outlives its operations, so that no operation copies it.
  std::string_view where;
  Scratch* scratch = nullptr;  // the communicator's reusable memory
  // Set while the communicator has isends or irecvs in flight: moves them forward
  // (and completes their Works), returning whether any still are. A wait outside the
  // transport (in shared memory) calls it, since nothing else drives those requests
  // while a blocking collective runs: a peer may be blocked in the matching receive.
  bool (*progress_in_flight)(void* engine) = nullptr;
  void* engine = nullptr;

  // Returns whether requests are still in flight after moving them forward.
  bool progress_background() const { return progress_in_flight != nullptr && progress_in_flight(engine); }

  // "all_reduce #42 on comm \"world\" (rank 1 of 4)"
  std::string label() const { return concat(name, " #", seq, " on ", where); }

  // The first report after first_report_ms of waiting (0: none); now_ms is when the
  // operation started, a coarse_now_ms() reading. Needs report_wait set.
  void arm_reports(int64_t now_ms, int64_t first_report_ms) {
    started_ms = now_ms;
    next_report_ms = first_report_ms > 0 ? now_ms + first_report_ms : 0;
    set_alarm();
  }

  // Throws the fault's status (kAborted, kPeerLost) once one is raised, kTimeout once
  // the deadline has passed; `waiting_for` says what the caller was waiting for
  // ("rank 3's data"), in the timeout's message and in the reports of a long wait.
  // The rest is out of line, in cold functions: every wait loop inlines check().
  void check(const char* waiting_for) const {
    if (fault != nullptr && fault->raised()) [[unlikely]]
      fail_stopped(waiting_for);
    if (alarm.expired_coarse()) [[unlikely]]
      on_alarm(waiting_for);
  }
  // The alarm went off: throws kTimeout past the deadline, else reports the wait if a
  // report is due.
  [[gnu::cold, gnu::noinline]] void on_alarm(const char* waiting_for) const {
    if (deadline.expired()) fail_timed_out(waiting_for);
    if (report_due() && report_wait != nullptr) report_wait(engine, *this, waiting_for);
  }
  // Whether a report of the wait is due now; if so, the next one is scheduled. Sets the
  // alarm either way. For a wait that reports itself rather than through check().
  bool report_due() const {
    const bool due = next_report_ms != 0 && coarse_now_ms() >= next_report_ms;
    if (due) next_report_ms = started_ms + 2 * (next_report_ms - started_ms);
    set_alarm();
    return due;
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_stopped(const char* waiting_for) const {
    fault->rethrow(concat(label(), " stopped waiting for ", waiting_for));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_timed_out(const char* waiting_for) const {
    fail(Status::kTimeout, concat(label(), " timed out after ", timeout_ms, " ms waiting for ", waiting_for));
  }

 private:
  void set_alarm() const {
    const bool report_first = next_report_ms != 0 && Deadline::after_ms_from(next_report_ms, 0).at() < deadline.at();
    alarm = report_first ? Deadline::after_ms_from(next_report_ms, 0) : deadline;
  }
};

}  // namespace tutti
