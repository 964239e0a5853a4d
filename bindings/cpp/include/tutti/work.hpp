// tutti/work.hpp: an operation in flight, as the _async forms of Comm's calls return it.
//
//   tutti::Work work = world.all_reduce_async(grads, TUTTI_OP_SUM);
//   ...compute something else...
//   work.wait();                                   // throws the operation's error
//   if (!work.wait(std::chrono::milliseconds(10))) { /* still running */ }
//
// Move-only; it owns its tutti_work and releases it once, and holds its communicator
// (tutti/comm.hpp says how long a communicator lives).
#ifndef TUTTI_CPP_WORK_HPP
#define TUTTI_CPP_WORK_HPP

#include <chrono>
#include <memory>
#include <utility>

#include "tutti.h"
#include "tutti/error.hpp"

namespace tutti {

class Work {
 public:
  // No operation: wait() and test() on it throw InvalidArgumentError, as in C.
  Work() noexcept = default;
  // Takes ownership of work, from a C call made by hand; comm, if given, is kept alive
  // until the Work is done with.
  explicit Work(tutti_work* work, std::shared_ptr<tutti_comm> comm = nullptr) noexcept
      : work_(work), comm_(std::move(comm)) {}

  Work(Work&& other) noexcept : work_(std::exchange(other.work_, nullptr)), comm_(std::move(other.comm_)) {}
  Work& operator=(Work&& other) noexcept {
    if (this != &other) {
      finish();
      work_ = std::exchange(other.work_, nullptr);
      comm_ = std::move(other.comm_);
    }
    return *this;
  }
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;

  // Releasing an unfinished tutti_work does not cancel it: its buffers stay in use
  // until it finishes. They are usually declared just before the Work and die just
  // after it, so the destructor first waits for the operation (tutti_work_wait with -1,
  // which the operation's own timeout bounds), then releases it. The operation's error,
  // if any, is dropped here: call wait() to see it. Assigning to a Work does the same
  // to the one it held.
  ~Work() { finish(); }

  // Waits until the operation finishes (at most its own timeout); throws its error.
  void wait() { check(tutti_work_wait(work_, -1)); }

  // Waits at most timeout (a negative one only looks). Returns true once the operation
  // has finished, false if it is still running (the Work stays valid: wait again or
  // test); throws the operation's error, a TimeoutError included if the operation
  // itself timed out.
  bool wait(std::chrono::milliseconds timeout) {
    const tutti_status status = tutti_work_wait(work_, timeout.count() < 0 ? 0 : timeout.count());
    if (status == TUTTI_INPROGRESS) return false;
    check(status);
    return true;
  }

  // True once the operation has finished; then wait() returns (or throws) at once.
  bool test() {
    int done = 0;
    check(tutti_work_test(work_, &done));
    return done != 0;
  }

  tutti_work* get() const noexcept { return work_; }

 private:
  void finish() noexcept {
    if (work_ == nullptr) return;
    tutti_work_wait(work_, -1);
    tutti_work_release(work_);
    work_ = nullptr;
  }

  tutti_work* work_ = nullptr;
  std::shared_ptr<tutti_comm> comm_;  // let go of after finish(), by ~Work
};

}  // namespace tutti

#endif  // TUTTI_CPP_WORK_HPP
