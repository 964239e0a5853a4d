// What each rank of a communicator is doing, published in the store so that a timed
// out collective can say which ranks had not joined it and where they were instead:
// "ranks that had not joined all_reduce #42: 2 (in broadcast #41 for 3.2 s)".
//
// The running thread only touches atomics (no cost on the fast path). A thread of the
// board's own wakes every second and publishes this rank's state once it has held
// for a second and differs from what was last published, so a steady stream of short
// operations writes nothing, and a stuck or idle rank is visible within ~2 s.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/common/deadline.h"
#include "runtime/store/client.h"

namespace tutti::collectives {

class ActivityBoard {
 public:
  ActivityBoard(store::Client& store, std::string prefix, int rank, int size);
  ~ActivityBoard();
  ActivityBoard(const ActivityBoard&) = delete;
  ActivityBoard& operator=(const ActivityBoard&) = delete;

  // The running thread enters and leaves collective `seq` (name must be static).
  void started(const char* name, uint32_t seq);
  void finished();

  // Publishes this rank's state now and reads every other rank's: the ranks whose
  // last started collective is before `seq`, each with what it was doing, e.g.
  // "2 (last seen in broadcast #41 for 3.2 s), 3 (no report: ...)". A rank that
  // joined less than ~2 s ago may not have reported it yet, hence "last seen". Empty if every rank reported joining. Bounded by
  // deadline; never throws.
  std::string absent_from(uint32_t seq, Deadline deadline);

 private:
  struct State {
    uint32_t seq;        // last collective started (0: none yet)
    bool running;
    const char* name;
  };
  State snapshot() const;
  std::string encode(const State& state) const;
  void publish(const State& state);
  void thread_main();

  store::Client& store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::atomic<uint32_t> seq_{0};
  std::atomic<bool> running_{false};
  std::atomic<const char*> name_{""};
  std::atomic<int64_t> since_ms_;  // wall clock of the last change, ms since the epoch

  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;  // guarded by mutex_
  std::string published_;  // the board thread's (and absent_from's) last value; guarded by mutex_
  std::thread thread_;
};

}  // namespace tutti::collectives
