// TimedChoice: a size's first call not counted, each form tried in turn, then the
// fastest per byte, the others tried in turn every kTryOthersEvery-th call, a change
// of the machine's state followed, and sizes of different powers of two timed apart.
#include <criterion/criterion.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/operation/timed_choice.h"

using namespace tutti;

namespace {

constexpr size_t kBytes = size_t{16} << 20;

// Runs `calls` calls of `bytes`, each form taking ns_per_byte[form] per byte; the
// forms chosen, in order.
std::vector<int> run(TimedChoice& choice, size_t bytes, const std::vector<double>& ns_per_byte, int calls) {
  std::vector<int> chosen;
  for (int i = 0; i < calls; ++i) {
    const int form = choice.choose(bytes);
    chosen.push_back(form);
    choice.record(bytes, form, static_cast<int64_t>(ns_per_byte[form] * static_cast<double>(bytes)));
  }
  return chosen;
}

int count_of(const std::vector<int>& chosen, int form, size_t from = 0) {
  int n = 0;
  for (size_t i = from; i < chosen.size(); ++i) n += chosen[i] == form;
  return n;
}

}  // namespace

Test(timed_choice, tries_each_form_then_takes_the_fastest) {
  TimedChoice choice(3);
  const std::vector<int> chosen = run(choice, kBytes, {0.10, 0.05, 0.08}, 4 + 9);
  // The first call's time is not counted, so form 0 runs again.
  const int first[] = {0, 0, 1, 2};
  for (size_t i = 0; i < 4; ++i) cr_assert_eq(chosen[i], first[i], "call %zu took form %d", i, chosen[i]);
  for (size_t i = 4; i < chosen.size(); ++i) cr_assert_eq(chosen[i], 1, "call %zu took form %d", i, chosen[i]);
}

Test(timed_choice, a_slow_first_call_does_not_decide) {
  // The size's first call pays for first touches: three times its time.
  TimedChoice choice(2);
  choice.record(kBytes, choice.choose(kBytes), static_cast<int64_t>(0.30 * kBytes));
  const std::vector<int> chosen = run(choice, kBytes, {0.10, 0.12}, 10);
  cr_assert_eq(chosen[0], 0);
  cr_assert_eq(chosen[1], 1);
  for (size_t i = 2; i < chosen.size(); ++i) cr_assert_eq(chosen[i], 0, "call %zu took form %d", i, chosen[i]);
}

Test(timed_choice, tries_the_others_in_turn_every_so_often) {
  TimedChoice choice(3);
  const int every = static_cast<int>(TimedChoice::kTryOthersEvery);
  const int calls = 4 + 4 * every;
  const std::vector<int> chosen = run(choice, kBytes, {0.10, 0.05, 0.08}, calls);
  // Past the first four calls, each slower form runs twice in four times kTryOthersEvery.
  cr_assert_eq(count_of(chosen, 0, 4), 2);
  cr_assert_eq(count_of(chosen, 2, 4), 2);
  cr_assert_eq(count_of(chosen, 1, 4), calls - 4 - 4);
}

Test(timed_choice, follows_a_change_of_state) {
  TimedChoice choice(2);
  std::vector<int> chosen = run(choice, kBytes, {0.10, 0.07}, 40);
  cr_assert_eq(chosen.back(), 1);
  // Form 1 becomes the slower: within its kept calls its best shows it.
  chosen = run(choice, kBytes, {0.10, 0.14}, 40);
  // Past those, form 1 runs only as a try.
  const int tries =
      (40 + static_cast<int>(TimedChoice::kTryOthersEvery) - 1) / static_cast<int>(TimedChoice::kTryOthersEvery);
  const int after = count_of(chosen, 1, TimedChoice::kKept);
  cr_assert(after <= tries, "form 1 ran %d times after the change, where it was tried %d times", after, tries);
  // And back: a try of form 1 shows its new time, so the change back is seen too.
  chosen = run(choice, kBytes, {0.10, 0.06}, 3 * static_cast<int>(TimedChoice::kTryOthersEvery) + 10);
  cr_assert_eq(chosen.back(), 1);
  cr_assert(count_of(chosen, 0, chosen.size() - 10) <= 1);
}

Test(timed_choice, sizes_of_other_powers_of_two_are_timed_apart) {
  TimedChoice choice(2);
  run(choice, kBytes, {0.10, 0.05}, 10);
  // 64 MiB, where form 0 is the faster, starts afresh; 16 MiB keeps its choice.
  const std::vector<int> large = run(choice, 4 * kBytes, {0.05, 0.10}, 10);
  const int first[] = {0, 0, 1};
  for (size_t i = 0; i < 3; ++i) cr_assert_eq(large[i], first[i], "call %zu took form %d", i, large[i]);
  cr_assert_eq(large.back(), 0);
  cr_assert_eq(run(choice, kBytes + 1, {0.10, 0.05}, 1)[0], 1);
}

Test(timed_choice, refuses_fewer_than_two_or_too_many_forms) {
  for (int forms : {0, 1, TimedChoice::kMaxForms + 1}) {
    bool refused = false;
    try {
      TimedChoice choice(forms);
    } catch (const Error& error) {
      refused = error.status() == Status::kInternal;
    }
    cr_assert(refused, "%d forms were accepted", forms);
  }
}
