// The dump signal (runtime/comm/dump_signal.h), in this process: with
// TUTTI_DUMP_SIGNAL unset no handler is installed; with USR1 (or usr2, SIGUSR2) the
// first communicator installs it, the signal makes the loop write every live
// communicator's dump to stderr, and the last one to go removes it, so the signal's
// default action is back; any other signal is refused naming the setting.
#include <signal.h>

#include "tests/runtime/comm/comm_ranks.h"
#include "tests/runtime/store/store_test.h"

using store_test::contains;
using store_test::count_of;
using store_test::eventually;

namespace {

bool default_action(int signum) {
  struct sigaction action;
  sigaction(signum, nullptr, &action);
  return action.sa_handler == SIG_DFL;
}

const char* const kWorld =
    "tutti: comm \"solo\" (rank 0 of 1), recent collectives:\n  #1 all_reduce int32 x 1 sum: done in ";
const char* const kSplit =
    "tutti: comm \"solo.split0.color3\" (rank 0 of 1), recent collectives:\n  (no collective yet)\n";

}  // namespace

Test(dump_signal, unset_installs_no_handler, .timeout = 30) {
  unsetenv("TUTTI_DUMP_SIGNAL");
  auto comm = comm_ranks::solo();
  cr_expect(default_action(SIGUSR1));
  cr_expect(default_action(SIGUSR2));
}

Test(dump_signal, usr1_writes_every_live_communicator_until_the_last_goes, .timeout = 30) {
  setenv("TUTTI_DUMP_SIGNAL", "USR1", 1);
  cr_assert(default_action(SIGUSR1));
  auto world = comm_ranks::solo("solo");
  cr_expect_not(default_action(SIGUSR1), "the first communicator installs the handler");
  cr_expect(default_action(SIGUSR2));
  auto sub = world->split(3, 0);
  comm_ranks::all_reduce_sum(*world, 1);

  store_test::StderrCapture err;
  kill(getpid(), SIGUSR1);
  cr_assert(eventually([&] { return contains(err.text(), kWorld) && contains(err.text(), kSplit); }, 5000),
            "after SIGUSR1, stderr has:\n%s", err.text().c_str());

  sub.reset();
  kill(getpid(), SIGUSR1);
  cr_assert(eventually([&] { return count_of(err.text(), kWorld) == 2; }, 5000), "%s", err.text().c_str());
  cr_expect_eq(count_of(err.text(), kSplit), 1, "a destroyed communicator was dumped:\n%s", err.text().c_str());
  cr_expect_not(default_action(SIGUSR1), "one communicator is still alive");

  world.reset();
  cr_expect(default_action(SIGUSR1), "the last communicator removes the handler");
}

Test(dump_signal, usr2_in_any_case_with_or_without_sig, .timeout = 30) {
  setenv("TUTTI_DUMP_SIGNAL", "sigusr2", 1);
  auto comm = comm_ranks::solo("solo");
  cr_expect(default_action(SIGUSR1));
  cr_expect_not(default_action(SIGUSR2));
  store_test::StderrCapture err;
  kill(getpid(), SIGUSR2);
  cr_assert(
      eventually([&] { return contains(err.text(), "tutti: comm \"solo\" (rank 0 of 1), recent collectives:\n"); },
                 5000),
      "%s", err.text().c_str());
}

Test(dump_signal, another_signal_is_refused_naming_the_setting, .timeout = 30) {
  setenv("TUTTI_DUMP_SIGNAL", "HUP", 1);
  std::string refused = comm_ranks::outcome_of([] { comm_ranks::solo(); });
  cr_expect_eq(refused, "INVALID_ARGUMENT TUTTI_DUMP_SIGNAL=\"HUP\" is not USR1 or USR2; set one of them, or unset it");
  cr_expect(default_action(SIGUSR1));
}
