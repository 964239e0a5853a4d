// The watchdog of a communicator's GPU operations, on the process's event loop. NCCL
// has no per-operation timeout: a rank that never joins leaves every other GPU
// spinning in a kernel. While operations are pending, a timer looks every poll_ms:
//   - an operation whose fence the GPU has passed completes with kOk;
//   - an asynchronous NCCL error, the communicator's fault (tutti_comm_abort, a peer
//     the failure detector declared lost) or an operation past its deadline is an
//     incident: every pending operation fails, with TIMEOUT (and the ranks that had
//     not joined), TRANSPORT or the fault's status, and then the NCCL communicator is
//     aborted (its kernels stop, the GPU stays usable). Later calls are refused.
// Decisions are made on the loop, which must never block; the abort and the report,
// which may take a while, run on a thread of the watchdog's own. What the watchdog
// asks of NCCL is the Watched interface, so that the logic is tested without a GPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/common/fault.h"
#include "runtime/loop/loop.h"
#include "runtime/work/work.h"

namespace tutti::device {

class Watched {
 public:
  virtual ~Watched() = default;
  // The NCCL communicator's asynchronous error, "" while there is none. Loop thread;
  // must not block.
  virtual std::string async_error() = 0;
  // Stops every kernel of the communicator (ncclCommAbort). Called at most once, on
  // the watchdog's own thread.
  virtual void abort() = 0;
};

// One operation on the GPU.
struct Watch {
  std::shared_ptr<work::Fence> fence;
  std::shared_ptr<work::Work> work;
  Deadline deadline = Deadline::passed();
  int64_t timeout_ms = 0;
  uint32_t seq = 0;   // the collective's number; 0 for a send or receive
  std::string label;  // "all_reduce #4 on comm \"world\" (rank 0 of 2)"
};

struct WatchdogSetup {
  std::shared_ptr<loop::Loop> loop;
  const Fault* fault = nullptr;  // the communicator's
  // After a timeout of collective seq: which ranks had not joined it (the activity
  // board's absent_from), e.g. "ranks that had not joined all_reduce #4: 1 (...)".
  // Runs on the watchdog's thread; bounded.
  std::function<std::string(uint32_t seq)> desync_report;
  int poll_ms = 1;
};

class Watchdog {
 public:
  Watchdog(WatchdogSetup setup, Watched& watched);
  // Stops the timer and waits for an incident's abort to finish; operations still
  // pending fail with kAborted (drain() first to let them finish).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Watches one operation. Any thread. Throws the incident's Error once there was one.
  void watch(Watch entry);
  // Whether an incident aborted the communicator; any thread, one atomic load.
  bool broken() const;
  // The same, for fences, which may outlive the watchdog (a Work kept after its
  // communicator was destroyed).
  std::shared_ptr<const std::atomic<bool>> broken_flag() const;
  // Throws the incident's status with api's name and what happened. Call if broken().
  [[noreturn]] void rethrow(const char* api) const;
  // Waits until no operation is pending, at most until deadline; false if some still are.
  bool drain(Deadline deadline);

  struct State;  // shared with the loop's callbacks

 private:
  std::shared_ptr<loop::Loop> loop_;
  std::shared_ptr<State> state_;
};

}  // namespace tutti::device
