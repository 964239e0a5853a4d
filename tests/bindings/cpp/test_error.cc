// Failures through the C++ wrapper become exceptions of the right class, with the
// status and tutti_last_error()'s message: bad arguments the C library refuses (a root
// or peer out of range, a NULL buffer, a negative tag, a bad config), buffers that do
// not fit (refused by the wrapper before anything is sent), an empty Comm, ranks that
// disagree (MismatchError; ctest sets TUTTI_CHECK=1 so that every kind is caught), and
// the mapping of every status to its class.
//   TUTTI_CHECK=1 tutti launch -n 3 -- build/tests/bindings.cpp.test_error
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/bindings/cpp/check.hpp"
#include "tutti/tutti.hpp"

namespace {

using check::raises;
using tutti::InvalidArgumentError;

// Each status throws its own class, a tutti::Error carrying the status, its name and
// the message; check() reads tutti_last_error() at once.
void status_classes(tutti::Comm&) {
  raises<tutti::TimeoutError>(
      TUTTI_ERR_TIMEOUT, "late", [] { tutti::throw_error(TUTTI_ERR_TIMEOUT, "late"); }, "ERR_TIMEOUT");
  raises<tutti::PeerLostError>(
      TUTTI_ERR_PEER_LOST, "gone", [] { tutti::throw_error(TUTTI_ERR_PEER_LOST, "gone"); }, "ERR_PEER_LOST");
  raises<tutti::MismatchError>(
      TUTTI_ERR_MISMATCH, "differ", [] { tutti::throw_error(TUTTI_ERR_MISMATCH, "differ"); }, "ERR_MISMATCH");
  raises<tutti::AbortedError>(
      TUTTI_ERR_ABORTED, "stop", [] { tutti::throw_error(TUTTI_ERR_ABORTED, "stop"); }, "ERR_ABORTED");
  raises<tutti::Error>(
      TUTTI_ERR_TRANSPORT, "wire", [] { tutti::throw_error(TUTTI_ERR_TRANSPORT, "wire"); }, "ERR_TRANSPORT");
  tutti::check(TUTTI_OK);
  try {
    tutti::check(tutti_config_init(nullptr, sizeof(tutti_config)));
    throw check::Failure("check() of a failed tutti_config_init did not throw");
  } catch (const InvalidArgumentError& e) {
    CHECK(std::string(e.what()) == tutti_last_error(), "what() is tutti_last_error()");
    CHECK(std::string(e.name()) == "TUTTI_ERR_INVALID_ARGUMENT", "name() is the status's name");
    const std::runtime_error& base = e;
    CHECK(std::strstr(base.what(), "config is NULL") != nullptr, "a tutti::Error is a std::runtime_error");
  }
}

// Refused by the C library: the message names the C function and says how to fix it.
void c_arguments(tutti::Comm& world) {
  const int size = world.size();
  std::vector<float> data(4, 1.0f), out(4);
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti_reduce: root " + std::to_string(size) + " is out of range",
      [&] { world.reduce(data, out, TUTTI_OP_SUM, size); }, "reduce to a root out of range");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti_broadcast: root -1 is out of range", [&] { world.broadcast(data, -1); },
      "broadcast from root -1");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti_all_reduce: the receive buffer is NULL",
      [&] { world.all_reduce(data, tutti::Buffer{}, TUTTI_OP_SUM); }, "all_reduce into no buffer");
  std::vector<float> gathered(static_cast<size_t>(size) * 4);
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti_all_gather: the send buffer is NULL",
      [&] { world.all_gather(tutti::Buffer(nullptr, 4, TUTTI_DTYPE_FLOAT32), gathered); },
      "all_gather from a NULL pointer with a count");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "peer " + std::to_string(size) + " is out of range",
      [&] { world.send(data, size, 0); }, "send to a peer out of range");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tag -2 is negative", [&] { world.recv(data, 0, -2); }, "recv with a negative tag");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "op 42 is not a tutti_op", [&] { world.all_reduce(data, static_cast<tutti_op>(42)); },
      "all_reduce with op 42");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "op_timeout_ms is 0", [&] { world.set_op_timeout(std::chrono::milliseconds(0)); },
      "set_op_timeout(0)");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "config.op_timeout_ms is -5",
      [] { tutti::Comm::init(tutti::Config().op_timeout(std::chrono::milliseconds(-5))); },
      "init with op_timeout -5 ms");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "config.name is empty", [] { tutti::Comm::init(tutti::Config().name("")); },
      "init with an empty name");
  world.barrier();  // no call above reached the other ranks
}

// Refused by the wrapper, which knows both buffers' sizes and types, before any call.
void wrapper_arguments(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  std::vector<float> four(4), floats(static_cast<size_t>(size) * 4 - 1);
  std::vector<int32_t> ints(4);
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT,
      "tutti::Comm::all_gather: recv holds " + std::to_string(floats.size()) +
          " elements but must hold comm.size() * send.size() = " + std::to_string(size * 4),
      [&] { world.all_gather(four, floats); }, "all_gather into a buffer one short");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti::Comm::all_reduce: recv is int32 but the operation's dtype is float32",
      [&] { world.all_reduce(four, ints, TUTTI_OP_SUM); }, "all_reduce float32 into int32");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti::Comm::reduce_scatter: send holds 4 elements",
      [&] { world.reduce_scatter(four, four, TUTTI_OP_SUM); }, "reduce_scatter with send of one block");
  if (size > 1) {
    std::vector<float> odd(static_cast<size_t>(size) + 1), out(odd.size());
    raises<InvalidArgumentError>(
        TUTTI_ERR_INVALID_ARGUMENT, "not a multiple of comm.size()", [&] { world.all_to_all(odd, out); },
        "all_to_all of size + 1 elements");
  }
  std::vector<float> three(3), two(2);
  std::vector<size_t> counts(static_cast<size_t>(size), 0);
  counts[0] = 2;
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti::Comm::all_to_allv: send_counts add up to 2 elements but send holds 3",
      [&] { world.all_to_allv(three, counts, two, counts); }, "all_to_allv with counts short of send");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "recv_counts has " + std::to_string(size + 1) + " entries",
      [&] { world.all_to_allv(two, counts, two, std::vector<size_t>(static_cast<size_t>(size) + 1)); },
      "all_to_allv with a count too many");
  // On the root only: the others do not use recv, so its size is theirs to choose.
  std::vector<float> small(1);
  if (rank == 0) {
    raises<InvalidArgumentError>(
        TUTTI_ERR_INVALID_ARGUMENT, "must hold comm.size() * send.size() on the root",
        [&] { world.gather(four, small, 0); }, "gather into a small buffer on the root");
  }
  world.barrier();
}

// An empty Comm (moved from) throws InvalidArgumentError from the C library, never crashes.
void empty_comm(tutti::Comm& world) {
  tutti::Comm mine = world.split(0, world.rank());
  tutti::Comm taken = std::move(mine);
  std::vector<int64_t> data(2, 1), out(2 * static_cast<size_t>(world.size()));
  CHECK(!mine && taken, "a moved-from Comm is empty and the new one is not");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti_all_reduce: comm is NULL", [&] { mine.all_reduce(data, TUTTI_OP_SUM); },
      "all_reduce on an empty Comm");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "tutti_all_gather: comm is NULL", [&] { mine.all_gather(data, out); },
      "all_gather on an empty Comm");
  raises<InvalidArgumentError>(
      TUTTI_ERR_INVALID_ARGUMENT, "comm is NULL", [&] { (void)mine.rank(); }, "rank() of an empty Comm");
  taken.barrier();
}

// Ranks that disagree on a count: every rank gets MismatchError naming rank 1.
void mismatch(tutti::Comm& world) {
  if (std::getenv("TUTTI_CHECK") == nullptr || std::strcmp(std::getenv("TUTTI_CHECK"), "1") != 0) {
    throw check::Failure("test_error needs TUTTI_CHECK=1 (tests/CMakeLists.txt sets it)");
  }
  if (world.size() < 2) return;
  tutti::Comm side = world.split(0, world.rank());
  std::vector<int32_t> data(world.rank() == 1 ? 10 : 11, 1);
  raises<tutti::MismatchError>(
      TUTTI_ERR_MISMATCH, "rank 1", [&] { side.all_reduce(data, TUTTI_OP_MAX); },
      "all_reduce with rank 1's count 10 against 11");
  world.barrier();
}

}  // namespace

int main() {
  return check::run("test_error", {
                                      {"status_classes", status_classes},
                                      {"c_arguments", c_arguments},
                                      {"wrapper_arguments", wrapper_arguments},
                                      {"empty_comm", empty_comm},
                                      {"mismatch", mismatch},
                                  });
}
