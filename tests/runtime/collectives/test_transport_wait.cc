// How a wait paces itself on its transport (runtime/collectives/transport_wait.h): it
// sleeps in the transport only after a millisecond without movement, and goes back to
// yielding for another millisecond when the transport turns out to be moving, whether
// a progress moved something or the transport had work waiting when asked to sleep.
#include <criterion/criterion.h>

#include <chrono>

#include "runtime/collectives/transport_wait.h"
#include "tests/runtime/collectives/thread_transport.h"

using Clock = std::chrono::steady_clock;
using thread_transport::ThreadTransport;
using thread_transport::World;
using tutti::collectives::TransportWait;

namespace {

// Counts the waits' sleeps in the transport; while busy, each finds work waiting and
// returns at once, as UCX's arm does with events still to progress. A progress moves
// something while moving is set.
class CountingTransport : public ThreadTransport {
 public:
  using ThreadTransport::ThreadTransport;
  bool progress() override { return moving; }
  bool wait_for_activity(int timeout_ms) override {
    ++sleeps;
    asked_at = Clock::now();
    if (busy) return false;
    return ThreadTransport::wait_for_activity(timeout_ms);
  }
  int sleeps = 0;
  Clock::time_point asked_at;  // when the wait last asked it to sleep
  bool busy = false;
  bool moving = false;
};

// Takes turns that move nothing until the wait asks the transport to sleep; when it
// asked (not counting the sleep). The tests measure from a moment taken before the turn
// that (re)started the wait's clock, so that a descheduling between that turn and this
// call cannot make the wait look early.
Clock::time_point idle_until_it_sleeps(TransportWait& wait, CountingTransport& transport) {
  const Clock::time_point start = Clock::now();
  const int sleeps = transport.sleeps;
  while (Clock::now() - start < std::chrono::seconds(2)) {
    wait.step();
    if (transport.sleeps > sleeps) return transport.asked_at;
  }
  cr_assert_fail("the wait never slept in the transport in 2 s of idling");
  return {};
}

}  // namespace

Test(transport_wait, sleeps_in_the_transport_only_after_a_millisecond_of_idling, .timeout = 10) {
  World world(1);
  CountingTransport transport(world, 0);
  TransportWait wait(transport);
  const Clock::time_point start = Clock::now();
  cr_assert_geq(idle_until_it_sleeps(wait, transport) - start, std::chrono::milliseconds(1));
  // Asleep it stays, turn after turn, while nothing moves.
  wait.step();
  cr_assert_eq(transport.sleeps, 2);
}

Test(transport_wait, a_progress_that_moved_sends_a_sleeping_wait_back_to_yielding, .timeout = 10) {
  World world(1);
  CountingTransport transport(world, 0);
  TransportWait wait(transport);
  idle_until_it_sleeps(wait, transport);
  transport.moving = true;
  const Clock::time_point moved = Clock::now();
  wait.step();
  transport.moving = false;
  cr_assert_geq(idle_until_it_sleeps(wait, transport) - moved, std::chrono::milliseconds(1));
}

Test(transport_wait, a_transport_with_work_waiting_counts_as_moving, .timeout = 10) {
  World world(1);
  CountingTransport transport(world, 0);
  TransportWait wait(transport);
  idle_until_it_sleeps(wait, transport);
  transport.busy = true;
  const Clock::time_point found_busy = Clock::now();
  wait.step();  // finds work waiting instead of sleeping
  transport.busy = false;
  cr_assert_geq(idle_until_it_sleeps(wait, transport) - found_busy, std::chrono::milliseconds(1));
}
