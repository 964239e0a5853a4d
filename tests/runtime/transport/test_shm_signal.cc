// The step words of signal.h: step numbers kept mod 2^32 and compared as serial
// numbers, so that a group past 2^32 steps (six minutes of back-to-back 8-byte
// broadcasts at 0.08 us) still orders the steps around the wrap correctly.
#include <criterion/criterion.h>

#include <cstdint>

#include "runtime/transport/shm/signal.h"

using namespace tutti::transport::shm;

namespace {

constexpr uint64_t kWrap = uint64_t{1} << 32;

}  // namespace

Test(shm_signal, a_word_carries_its_step_and_shape) {
  uint64_t word = step_word(kWrap * 3 + 17, 0xdeadbeef);
  cr_expect(at_step(word, 17));
  cr_expect(at_step(word, kWrap + 17));
  cr_expect(!at_step(word, 18));
  cr_expect_eq(shape_of(word), 0xdeadbeefu);
}

Test(shm_signal, reached_orders_steps_across_the_wrap) {
  // Steps as far apart as one rank can be from another (a ring of entries), on both
  // sides of 2^32 and of 0.
  for (uint64_t base : {uint64_t{1}, kWrap - kStepEntries, kWrap - 1, kWrap, 5 * kWrap + 3}) {
    for (uint64_t ahead = 0; ahead <= kStepEntries; ++ahead) {
      uint64_t later = step_word(base + ahead, 7);
      cr_assert(reached(later, base), "step %llu + %llu should count as reached for %llu",
                static_cast<unsigned long long>(base), static_cast<unsigned long long>(ahead),
                static_cast<unsigned long long>(base));
      if (ahead > 0) {
        uint64_t earlier = step_word(base, 7);
        cr_assert(!reached(earlier, base + ahead), "step %llu should not count as reached for %llu",
                  static_cast<unsigned long long>(base), static_cast<unsigned long long>(base + ahead));
      }
    }
  }
  // An entry no rank has written yet holds 0, which no step of a group's first
  // 2^31 counts as reached.
  cr_expect(!reached(0, 1));
  cr_expect(!reached(0, kStepEntries));
}

Test(shm_signal, entries_share_cache_lines_four_to_one) {
  cr_expect_eq(sizeof(StepEntry), kStepBytes);
  cr_expect_eq(kCacheLine % sizeof(StepEntry), 0u);
  Control control{};
  cr_expect_eq(&entry_of(control, kStepEntries + 5), &control.entries[5]);
}
