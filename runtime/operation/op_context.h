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
  const char* name = "";        // "all_reduce", as users spell the call without tutti_
  uint32_t seq = 0;             // this operation's number on its communicator, from 1
  uint16_t call_check = 0;      // the call's folded fingerprint, in every message's Tag::check
  Deadline deadline = Deadline::passed();
  int64_t timeout_ms = 0;       // what deadline was made from, for messages
  const Fault* fault = nullptr;  // the communicator's
  // "comm \"world\" (rank 1 of 4)", for messages: a view of the communicator's own
  // string, which outlives its operations, so that no operation copies it.
  std::string_view where;
  Scratch* scratch = nullptr;   // the communicator's reusable memory
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

  // Throws the fault's status (kAborted, kPeerLost) once one is raised, kTimeout once
  // the deadline has passed; `waiting_for` says what the caller was waiting for
  // ("rank 3's data").
  // The messages are out of line, in cold functions: every wait loop inlines check().
  void check(const char* waiting_for) const {
    if (fault != nullptr && fault->raised()) [[unlikely]] fail_stopped(waiting_for);
    if (deadline.expired()) [[unlikely]] fail_timed_out(waiting_for);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_stopped(const char* waiting_for) const {
    fault->rethrow(concat(label(), " stopped waiting for ", waiting_for));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_timed_out(const char* waiting_for) const {
    fail(Status::kTimeout, concat(label(), " timed out after ", timeout_ms, " ms waiting for ", waiting_for));
  }
};

}  // namespace tutti
