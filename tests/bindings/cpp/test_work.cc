// tutti::Work through the C++ wrapper: the _async forms, wait(timeout) that runs out
// and then succeeds, test() polling, several operations outstanding, a Work destroyed
// unfinished (its destructor waits, so its buffers are safe to leave the scope), moves,
// and the operation's own errors thrown by wait, told apart from a wait that ran out.
//   tutti launch -n 3 -- build/tests/bindings.cpp.test_work
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "tests/bindings/cpp/check.hpp"
#include "tutti/tutti.hpp"

namespace {

using std::chrono::milliseconds;

// Polls test() for up to `seconds`; returns whether the work finished.
bool poll(tutti::Work& work, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (work.test()) return true;
  }
  return false;
}

// An all_reduce that cannot finish while rank 1 is held back on a second communicator
// (operations on different communicators never wait for each other): wait(50 ms) runs
// out and leaves the Work valid, and once rank 1 joins, test() and wait() see it done.
void wait_with_timeout(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  tutti::Comm side = world.split(0, rank);
  std::vector<int32_t> flag(1, 1);
  std::vector<int32_t> data(4, rank + 1);
  if (rank == 1) {
    side.recv(flag, 0, 0);
    world.all_reduce(data, TUTTI_OP_SUM);
  } else {
    tutti::Work work = world.all_reduce_async(data, TUTTI_OP_SUM);
    if (rank == 0) {
      CHECK(!work.wait(milliseconds(50)), "wait(50 ms) returns false while rank 1 is held back");
      CHECK(!work.test(), "test() is false while rank 1 is held back");
      side.send(flag, 1, 0);
    }
    CHECK(poll(work, 30), "test() becomes true within 30 s once rank 1 joined");
    CHECK(work.wait(milliseconds(0)), "wait(0) after test() said done");
    work.wait();
  }
  check::equal(data, std::vector<int32_t>(4, size * (size + 1) / 2), "async all_reduce result");
}

// Several operations outstanding, of every kind, waited in the reverse order.
void many_outstanding(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<int64_t> sum(3, rank), gathered(static_cast<size_t>(size)), broadcast(2, rank);
  const std::vector<int64_t> mine(1, rank * 7);
  std::vector<tutti::Work> works;
  works.push_back(world.all_reduce_async(sum, TUTTI_OP_SUM));
  works.push_back(world.all_gather_async(mine, gathered));
  works.push_back(world.broadcast_async(broadcast, size - 1));
  works.push_back(world.barrier_async());
  for (auto it = works.rbegin(); it != works.rend(); ++it) it->wait();
  std::vector<int64_t> expected_gathered;
  for (int r = 0; r < size; ++r) expected_gathered.push_back(r * 7);
  check::equal(sum, std::vector<int64_t>(3, size * (size - 1) / 2), "outstanding all_reduce");
  check::equal(gathered, expected_gathered, "outstanding all_gather");
  check::equal(broadcast, std::vector<int64_t>(2, size - 1), "outstanding broadcast");
}

// A Work that goes out of scope unfinished waits for its operation: its buffer holds
// the result right after, although rank 1 joined the all_reduce only once rank 0's
// signal, posted just before, reached it.
void destroyed_unfinished(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  tutti::Comm side = world.split(0, rank);
  std::vector<int32_t> flag(1, 1);
  std::vector<float> data(64, 1.0f);
  if (rank == 1) {
    side.recv(flag, 0, 0);
    world.all_reduce(data, TUTTI_OP_SUM);
  } else {
    tutti::Work signal;
    {
      tutti::Work work = world.all_reduce_async(data, TUTTI_OP_SUM);
      if (rank == 0) signal = side.send_async(flag, 1, 0);
    }
    check::equal(data, std::vector<float>(64, static_cast<float>(size)), "the buffer once the Work is gone");
  }
}

// Moves leave the source empty; an empty Work's calls throw InvalidArgumentError, as
// tutti.h's calls do on a NULL work, and move assignment finishes the Work it replaces.
void moves(tutti::Comm& world) {
  const int size = world.size();
  std::vector<int32_t> first(2, 1), second(2, 2);
  tutti::Work a = world.all_reduce_async(first, TUTTI_OP_SUM);
  tutti::Work b = std::move(a);
  CHECK(a.get() == nullptr && b.get() != nullptr, "a moved-from Work is empty");
  check::raises<tutti::InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "work is NULL", [&] { a.wait(); }, "wait() on a moved-from Work");
  check::raises<tutti::InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "work is NULL", [&] { a.test(); }, "test() on a moved-from Work");
  b = world.all_reduce_async(second, TUTTI_OP_SUM);  // the first all_reduce finishes here
  check::equal(first, std::vector<int32_t>(2, size), "the replaced Work's result");
  b.wait();
  check::equal(second, std::vector<int32_t>(2, 2 * size), "the new Work's result");
}

// An all_reduce that the other rank of a pair never joins, on a communicator whose
// operations may take 300 ms: wait(10 s) throws the operation's own TimeoutError rather
// than returning false, as it would had the wait's bound passed first.
void operation_timeout(tutti::Comm& world) {
  const int rank = world.rank();
  // Ranks in pairs (0, 1), (2, 3) ...: the first of a pair calls all_reduce, alone.
  tutti::Comm pair = world.split(rank / 2, rank);
  pair.set_op_timeout(milliseconds(300));
  if (pair.size() == 2 && pair.rank() == 0) {
    std::vector<int32_t> data(1);
    tutti::Work work = pair.all_reduce_async(data, TUTTI_OP_SUM);
    check::raises<tutti::TimeoutError>(
        TUTTI_ERR_TIMEOUT, "timed out after 300 ms", [&] { work.wait(milliseconds(10000)); },
        "wait(10 s) on an all_reduce that times out after 300 ms");
  }
  world.barrier();
}

// A Work keeps its communicator alive: the Comm goes out of scope, or is destroyed,
// while its operation is still waiting for rank 1, and the operation completes all
// the same; the communicator goes once the last Work of it is done with.
void outlives_its_comm(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  tutti::Comm side = world.split(0, rank);
  std::vector<int32_t> flag(1, 1);
  std::vector<int32_t> data(8, rank);
  tutti::Work work;
  {
    tutti::Comm copy = world.split(0, rank);
    if (rank == 1) {
      side.recv(flag, 0, 0);
      copy.all_reduce(data, TUTTI_OP_MAX);
      copy.barrier();
    } else {
      work = copy.all_reduce_async(data, TUTTI_OP_MAX);
      tutti::Work second = copy.barrier_async();
      copy.destroy();
      CHECK(!copy, "destroy() leaves the Comm empty");
      if (rank == 0) side.send(flag, 1, 0);
      second.wait();
    }
  }
  if (rank != 1) work.wait();
  check::equal(data, std::vector<int32_t>(8, size - 1), "the all_reduce of a Comm gone out of scope");
  world.barrier();
}

// abort() fails the pending receive and every later call with AbortedError. Rank 0
// aborts a communicator of its own: to the other ranks of a communicator, one rank's
// abort is the loss of that rank (PeerLostError), which is not what this tests.
void aborted(tutti::Comm& world) {
  const int rank = world.rank();
  tutti::Comm alone = world.split(rank, 0);
  if (rank == 0) {
    std::vector<int32_t> in(1);
    tutti::Work work = alone.recv_async(in, 0, 3);  // from itself, which never sends
    alone.abort();
    check::raises<tutti::AbortedError>(
        TUTTI_ERR_ABORTED, "was aborted", [&] { work.wait(); }, "wait() after abort()");
    check::raises<tutti::AbortedError>(
        TUTTI_ERR_ABORTED, "was aborted", [&] { alone.barrier(); }, "barrier() after abort()");
  }
  world.barrier();
}

}  // namespace

int main() {
  return check::run("test_work", {
                                     {"wait_with_timeout", wait_with_timeout},
                                     {"many_outstanding", many_outstanding},
                                     {"destroyed_unfinished", destroyed_unfinished},
                                     {"moves", moves},
                                     {"operation_timeout", operation_timeout},
                                     {"aborted", aborted},
                                     {"outlives_its_comm", outlives_its_comm},
                                 });
}
