// tutti::Comm and tutti::Config through the C++ wrapper: the places of a rank, split
// (with TUTTI_UNDEFINED giving an empty Comm), shrink, grow's and join's errors, dump,
// set_op_timeout, moves and the order handles die in, a Config's copies, and a C
// handle taken over by hand.
//   tutti launch -n 3 -- build/tests/bindings.cpp.test_comm
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tests/bindings/cpp/check.hpp"
#include "tutti/tutti.hpp"

namespace {

// The job runs on one node under tutti launch.
void places(tutti::Comm& world) {
  CHECK(world.rank() >= 0 && world.rank() < world.size(), "rank in [0, size)");
  CHECK(world.local_size() == world.size(), "one node: local_size == size");
  CHECK(world.local_rank() == world.rank(), "one node: local_rank == rank");
  CHECK(world.node_rank() == 0, "one node: node_rank 0");
}

// Even and odd ranks split; the last rank passes TUTTI_UNDEFINED and gets an empty Comm.
void split(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  const bool out = rank == size - 1 && size > 1;
  // Keys reverse the order: the highest rank of each colour comes first.
  tutti::Comm half = world.split(out ? TUTTI_UNDEFINED : rank % 2, -rank);
  if (out) {
    CHECK(!half && half.get() == nullptr, "TUTTI_UNDEFINED gives an empty Comm");
  } else {
    int members = 0, before_me = 0;
    for (int r = 0; r < size; ++r) {
      if (r % 2 != rank % 2 || (r == size - 1 && size > 1)) continue;
      ++members;
      if (r > rank) ++before_me;
    }
    CHECK(half.size() == members, "the split's size: " + std::to_string(half.size()));
    CHECK(half.rank() == before_me, "the split's rank, ordered by key: " + std::to_string(half.rank()));
    std::vector<int32_t> ranks(1, rank);
    half.all_reduce(ranks, TUTTI_OP_MAX);
    CHECK(ranks[0] % 2 == rank % 2, "the split's all_reduce stays within the colour");
  }
  world.barrier();
}

// Without a loss, shrink keeps every rank in its order, and the new Comm works.
void shrink(tutti::Comm& world) {
  tutti::Comm copy = world.split(0, world.rank());
  tutti::Comm survivors = copy.shrink();
  CHECK(survivors.size() == world.size() && survivors.rank() == world.rank(), "shrink without a loss keeps all");
  std::vector<int32_t> one(1, 1);
  survivors.all_reduce(one, TUTTI_OP_SUM);
  CHECK(one[0] == world.size(), "all_reduce on the shrunk Comm");
}

// grow() with no joiner coming throws the grow's TimeoutError on every rank, and the
// Comm it grew from goes on; join() refuses a rank of the caller's choosing.
void grow_and_join_errors(tutti::Comm& world) {
  tutti::Comm copy = world.split(0, world.rank());
  copy.set_op_timeout(std::chrono::milliseconds(500));
  std::string why;
  try {
    copy.grow(1);
  } catch (const tutti::TimeoutError& error) {
    why = error.what();
  }
  CHECK(why.find("0 of the 1 joiners came") != std::string::npos, "grow without a joiner: " + why);
  copy.set_op_timeout(std::chrono::milliseconds(20000));
  std::vector<int32_t> one(1, 1);
  copy.all_reduce(one, TUTTI_OP_SUM);
  CHECK(one[0] == world.size(), "all_reduce on the Comm that failed to grow");
  bool refused = false;
  try {
    tutti::Comm::join(tutti::Config().rank(0));
  } catch (const tutti::InvalidArgumentError&) {
    refused = true;
  }
  CHECK(refused, "join() with a rank set is an InvalidArgumentError");
}

// dump() writes the Comm's name (from the runner's Config) and its recent collectives.
void dump(tutti::Comm& world) {
  std::vector<float> data(3, 1.0f);
  world.all_reduce(data, TUTTI_OP_SUM);
  std::FILE* file = std::tmpfile();
  CHECK(file != nullptr, "tmpfile()");
  world.dump(fileno(file));
  std::rewind(file);
  std::string text(4096, '\0');
  text.resize(std::fread(&text[0], 1, text.size(), file));
  std::fclose(file);
  const std::string who =
      "comm \"cpp\" (rank " + std::to_string(world.rank()) + " of " + std::to_string(world.size()) + ")";
  CHECK(text.find(who) != std::string::npos, "the dump names " + who + ": " + text);
  CHECK(text.find("all_reduce float32 x 3 sum") != std::string::npos, "the dump lists the all_reduce: " + text);
}

// A Comm of its own with a short op timeout: a receive nobody answers fails in time.
void set_op_timeout(tutti::Comm& world) {
  tutti::Comm pair = world.split(world.rank() / 2, world.rank());
  pair.set_op_timeout(std::chrono::milliseconds(200));
  if (pair.size() == 2 && pair.rank() == 0) {
    std::vector<int32_t> in(1);
    check::raises<tutti::TimeoutError>(
        TUTTI_ERR_TIMEOUT, "timed out after 200 ms", [&] { pair.recv(in, 1, 0); },
        "recv with nobody sending, op timeout 200 ms");
  }
  world.barrier();
}

// Moves hand the handle over; move assignment destroys the Comm it replaces first; a
// C handle can be taken over; Comms die in reverse order of their making.
void moves_and_lifetimes(tutti::Comm& world) {
  const int rank = world.rank(), size = world.size();
  tutti::Comm a = world.split(0, rank);
  tutti_comm* raw = a.get();
  tutti::Comm b(std::move(a));
  CHECK(!a && b.get() == raw, "move construction hands the handle over");
  a = std::move(b);
  CHECK(a.get() == raw && !b, "move assignment hands it back");
  a = world.split(1, rank);  // the first split is destroyed here, on every rank
  CHECK(a && a.get() != nullptr, "move assignment from a new split");
  std::vector<int64_t> sum(1, rank);
  a.all_reduce(sum, TUTTI_OP_SUM);
  CHECK(sum[0] == static_cast<int64_t>(size) * (size - 1) / 2, "all_reduce on the replacing Comm");

  tutti_comm* by_hand = nullptr;
  tutti::check(tutti_comm_split(world.get(), 0, rank, &by_hand));
  tutti::Comm adopted(by_hand);
  CHECK(adopted.size() == size, "a C handle adopted");
  a = std::move(adopted);
  a.barrier();

  // A chain of splits, each made from the one before; they die innermost first.
  {
    tutti::Comm outer = world.split(0, rank);
    tutti::Comm inner = outer.split(0, rank);
    tutti::Comm innermost = inner.split(0, rank);
    innermost.barrier();
  }
  world.barrier();
}

// Copies of a Config are independent: each keeps its own strings.
void config_copies(tutti::Comm&) {
  tutti::Config first;
  first.name("first").init_method("tcp://127.0.0.1:1").rank(2).world_size(3);
  tutti::Config second = first;
  second.name("second");
  const tutti_config a = first.c_config(), b = second.c_config();
  CHECK(std::string(a.name) == "first" && std::string(b.name) == "second", "names stay apart");
  CHECK(std::string(b.init_method) == "tcp://127.0.0.1:1", "the copy keeps the init method");
  CHECK(a.rank == 2 && a.world_size == 3 && a.op_timeout_ms == -1, "fields set and defaults kept");
  const tutti_config defaults = tutti::Config().c_config();
  CHECK(defaults.name == nullptr && defaults.init_method == nullptr && defaults.rank == -1 && defaults.trace == nullptr,
        "a fresh Config holds tutti_config_init's defaults");
  CHECK(std::string(tutti::Config().trace("/tmp/t").c_config().trace) == "/tmp/t", "the trace folder");
}

}  // namespace

int main() {
  return check::run("test_comm", {
                                     {"places", places},
                                     {"split", split},
                                     {"shrink", shrink},
                                     {"grow_and_join_errors", grow_and_join_errors},
                                     {"dump", dump},
                                     {"set_op_timeout", set_op_timeout},
                                     {"moves_and_lifetimes", moves_and_lifetimes},
                                     {"config_copies", config_copies},
                                 });
}
