#include "runtime/operation/timed_choice.h"

#include <algorithm>
#include <bit>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti {

TimedChoice::TimedChoice(int forms) : forms_(forms) {
  if (forms < 2 || forms > kMaxForms) {
    fail(Status::kInternal, concat("TimedChoice of ", forms, " forms: it chooses among 2 to ", kMaxForms));
  }
}

double TimedChoice::Times::best() const { return *std::min_element(ns_per_byte, ns_per_byte + kept); }

int TimedChoice::class_of(size_t bytes) { return bytes == 0 ? 0 : std::bit_width(bytes) - 1; }

int TimedChoice::choose(size_t bytes) {
  SizeClass& size_class = classes_[class_of(bytes)];
  const uint64_t call = size_class.calls++;
  for (int form = 0; form < forms_; ++form) {
    if (size_class.forms[form].kept == 0) return form;
  }
  int fastest = 0;
  for (int form = 1; form < forms_; ++form) {
    if (size_class.forms[form].best() < size_class.forms[fastest].best()) fastest = form;
  }
  if ((call + 1) % kTryOthersEvery != 0) return fastest;
  // The others in turn: the first try after the fastest, then the second, ...
  const auto others = static_cast<uint64_t>(forms_ - 1);
  const auto turn = static_cast<int>((call + 1) / kTryOthersEvery % others);
  return (fastest + 1 + turn) % forms_;
}

void TimedChoice::record(size_t bytes, int form, int64_t ns) {
  if (form < 0 || form >= forms_ || bytes == 0) return;
  SizeClass& size_class = classes_[class_of(bytes)];
  if (!size_class.recorded) {
    size_class.recorded = true;
    return;
  }
  Times& times = size_class.forms[form];
  times.ns_per_byte[times.next] = static_cast<double>(ns) / static_cast<double>(bytes);
  times.next = (times.next + 1) % kKept;
  times.kept = std::min(times.kept + 1, kKept);
}

}  // namespace tutti
