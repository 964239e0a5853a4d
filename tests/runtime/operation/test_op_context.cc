// OpContext::check: a long wait is reported at doubling intervals (no silent waits),
// the deadline still ends it, and a context made without reports behaves as before.
#include <criterion/criterion.h>

#include <string>
#include <thread>
#include <vector>

#include "runtime/common/deadline.h"
#include "runtime/common/error.h"
#include "runtime/operation/op_context.h"

using namespace tutti;

namespace {

struct Reports {
  std::vector<int64_t> waited_ms;
  std::string waiting_for;
};

void record(void* reports, const OpContext& context, const char* waiting_for) {
  auto* r = static_cast<Reports*>(reports);
  r->waited_ms.push_back(coarse_now_ms() - context.started_ms);
  r->waiting_for = waiting_for;
}

// Calls check() every millisecond until `ms` have passed or it throws; the status
// thrown, or kOk.
Status wait_checking(const OpContext& context, int64_t ms) {
  const Deadline until = Deadline::after_ms(ms);
  try {
    while (!until.expired()) {
      context.check("rank 3's data");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  } catch (const Error& error) {
    return error.status();
  }
  return Status::kOk;
}

OpContext context_of(int64_t timeout_ms) {
  OpContext context;
  context.name = "all_reduce";
  context.seq = 7;
  context.timeout_ms = timeout_ms;
  context.deadline = Deadline::after_ms_from(coarse_now_ms(), timeout_ms);
  return context;
}

}  // namespace

Test(op_context, a_long_wait_is_reported_each_time_it_doubles, .timeout = 10) {
  Reports reports;
  OpContext context = context_of(5000);
  context.engine = &reports;
  context.report_wait = record;
  context.arm_reports(coarse_now_ms(), 100);
  cr_assert_eq(wait_checking(context, 1100), Status::kOk);
  // At 100, 200, 400 and 800 ms, never earlier (later by a coarse tick, or by as much
  // as a loaded machine delays the waiting thread); the next is due at 1600.
  cr_assert_eq(reports.waited_ms.size(), 4u, "%zu reports", reports.waited_ms.size());
  const int64_t due[] = {100, 200, 400, 800};
  for (size_t i = 0; i < 4; ++i) {
    cr_expect(reports.waited_ms[i] >= due[i], "report %zu after %lld ms", i,
              static_cast<long long>(reports.waited_ms[i]));
  }
  cr_expect_eq(reports.waiting_for, "rank 3's data");
}

Test(op_context, the_deadline_ends_a_reported_wait, .timeout = 10) {
  Reports reports;
  OpContext context = context_of(300);
  context.engine = &reports;
  context.report_wait = record;
  context.arm_reports(coarse_now_ms(), 100);
  try {
    for (;;) context.check("rank 3's data");
  } catch (const Error& error) {
    cr_expect_eq(error.status(), Status::kTimeout);
    cr_expect(std::string(error.what()).find("all_reduce #7 on  timed out after 300 ms waiting for rank 3's data") == 0,
              "%s", error.what());
  }
  // Due at 100 and 200 ms (a stalled thread may find the first already overtaken by
  // the deadline); none after it.
  cr_expect(reports.waited_ms.size() >= 1 && reports.waited_ms.size() <= 2, "%zu reports", reports.waited_ms.size());
}

Test(op_context, without_reports_check_only_times_out, .timeout = 10) {
  OpContext context = context_of(200);  // as code that never arms reports makes one
  cr_assert_eq(wait_checking(context, 100), Status::kOk);
  cr_assert_eq(wait_checking(context, 1000), Status::kTimeout);
}

Test(op_context, a_wait_that_reports_itself_asks_report_due, .timeout = 10) {
  OpContext context = context_of(5000);
  context.arm_reports(coarse_now_ms(), 50);
  int due = 0;
  const Deadline until = Deadline::after_ms(320);
  while (!until.expired()) {
    if (context.alarm.expired() && context.report_due()) ++due;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cr_expect_eq(due, 3, "due at 50, 100 and 200 ms: %d", due);
}
