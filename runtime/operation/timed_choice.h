// Chooses among a collective's forms by how long its recent calls took, for choices
// whose better side depends on the machine's state of the moment rather than on the
// sizes at hand.
//
// The case that asked for it (shm/group_reduce.cc): on this project's VM, whose two
// cores share a cache for some minutes and not for the next, a 2-rank all_reduce of
// 16 MiB on plain buffers took 1367-1520 us chunk by chunk and 1678 through the
// pipeline while they shared one, but 2024-2180 against 1561-1624 while they did not.
// No size threshold is right in both states; times of the calls themselves are.
//
// Calls are grouped by size (a power of two of bytes each) and timed per byte. The
// first call of a size is not counted: it may pay for first touches (page faults in
// buffers of that size), which no later call does. Then the forms take a call each in
// turn, and from there every call takes the form whose best of its last kKept calls
// was fastest, except every kTryOthersEvery-th, which takes the next other form in
// turn, so that every form's time follows the machine: after a change of state the
// form in use shows its new time within kKept calls, and each other's is renewed
// every (forms - 1) * kTryOthersEvery calls. The best of a few, not an average, so
// that a call delayed by something else (a preempted rank) does not decide. The
// tries cost the calls they take: with forms 70% apart (2 ranks, 16 MiB in place,
// close state), one call in 32 costs about 2%.
//
// One instance serves one rank. The ranks of a collective must run the same form, so
// one rank chooses and tells the others; that, and the timing, are the caller's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tutti {

class TimedChoice {
 public:
  static constexpr int kMaxForms = 4;
  static constexpr int kKept = 3;
  static constexpr uint64_t kTryOthersEvery = 32;

  // forms: how many there are, 2 to kMaxForms; form 0 runs first.
  explicit TimedChoice(int forms);

  // The form the next call of `bytes` takes.
  int choose(size_t bytes);
  // What a call of `bytes` in `form` took.
  void record(size_t bytes, int form, int64_t ns);

 private:
  struct Times {
    double ns_per_byte[kKept] = {};
    int kept = 0;  // how many of ns_per_byte hold times, up to kKept
    int next = 0;  // which one the next time replaces
    double best() const;
  };
  struct SizeClass {
    Times forms[kMaxForms];
    uint64_t calls = 0;     // chosen so far
    bool recorded = false;  // whether its first call's time came, which is not kept
  };
  static constexpr int kClasses = 64;  // one per power of two of bytes

  static int class_of(size_t bytes);

  int forms_;
  SizeClass classes_[kClasses];
};

}  // namespace tutti
