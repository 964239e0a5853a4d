// The shared-memory group (runtime/transport/shm/) with its ranks as threads, each with
// a store client and a Group of its own, meeting at an in-memory store as the ranks of
// a node would: every collective at 1..8 ranks, counts from 0 across several chunks,
// int32/float32/float16 with SUM, MAX and AVG, the in-place forms, guard bytes around
// every buffer, mixed sequences (double-buffer reuse across collectives), abort,
// timeouts naming the missing rank, the group's failed state, and /dev/shm left clean.
// One test runs the ranks as real processes, more of them than there are cores, so
// that waits end in futex sleeps woken from another process.
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/operation/dtype.h"
#include "runtime/operation/op_context.h"
#include "runtime/operation/reduce_op.h"
#include "runtime/operation/scratch.h"
#include "runtime/transport/shm/group.h"
#include "runtime/transport/shm/layout.h"
#include "runtime/transport/shm/segment.h"
#include "runtime/transport/shm/signal.h"
#include "tests/runtime/store/store_test.h"
#include "tests/support/processes.h"

using tutti::Deadline;
using tutti::Dtype;
using tutti::Error;
using tutti::Fault;
using tutti::OpContext;
using tutti::ReduceOp;
using tutti::Scratch;
using tutti::Status;
using tutti::transport::shm::Group;
using tutti::transport::shm::max_shared_part;
using tutti::transport::shm::shared_size_error;

namespace {

using store_test::contains;
using store_test::ms_since;
using store_test::soon;

constexpr int kRankCounts[] = {1, 2, 3, 4, 5, 8};
constexpr Dtype kDtypes[] = {Dtype::kInt32, Dtype::kFloat32, Dtype::kFloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg};
using tutti::transport::shm::kInlineBytes;
using tutti::transport::shm::Layout;
// Empty, one element, the most float32 that ride in a step entry and one more, a few,
// then counts that take one handshake at some rank counts and the chunked pipeline at
// others, and enough for several 1 MiB chunks.
constexpr size_t kCounts[] = {0, 1, kInlineBytes / 4, kInlineBytes / 4 + 1, 7, 3000, 70001, 900001};
// Bytes per rank for the data movers: from empty, through the most that rides in a
// step entry, in a note and in a cell (at 2 ranks, 4 KiB), to a dozen 256 KiB chunks.
constexpr size_t kBlockBytes[] = {
    0, 1, kInlineBytes, kInlineBytes + 1, Layout::kNoteBytes, Layout::kNoteBytes + 1, 1000, 3000001};
static_assert(kInlineBytes / 4 + 1 < 7 && Layout::kNoteBytes + 1 < 1000);

// Rank r's element i: small integers, so that sums of up to 8 ranks are exact in float16.
double value_of(int rank, size_t i) { return static_cast<double>(static_cast<int>((rank * 7 + i * 3) % 11) - 5); }

void put(unsigned char* buffer, size_t i, Dtype dtype, double value) {
  switch (dtype) {
    case Dtype::kInt32: {
      auto v = static_cast<int32_t>(value);
      std::memcpy(buffer + 4 * i, &v, 4);
      return;
    }
    case Dtype::kFloat32: {
      auto v = static_cast<float>(value);
      std::memcpy(buffer + 4 * i, &v, 4);
      return;
    }
    case Dtype::kFloat16: {
      uint16_t v = tutti::float_to_half(static_cast<float>(value));
      std::memcpy(buffer + 2 * i, &v, 2);
      return;
    }
    default: cr_assert_fail("put: no test dtype %d", static_cast<int>(dtype));
  }
}

double get(const unsigned char* buffer, size_t i, Dtype dtype) {
  switch (dtype) {
    case Dtype::kInt32: {
      int32_t v;
      std::memcpy(&v, buffer + 4 * i, 4);
      return v;
    }
    case Dtype::kFloat32: {
      float v;
      std::memcpy(&v, buffer + 4 * i, 4);
      return v;
    }
    case Dtype::kFloat16: {
      uint16_t v;
      std::memcpy(&v, buffer + 2 * i, 2);
      return tutti::half_to_float(v);
    }
    default: return NAN;
  }
}

// The reduction of every rank's element i, computed here.
double expected(Dtype dtype, ReduceOp op, int size, size_t i) {
  double sum = 0, max = -1e300;
  for (int r = 0; r < size; ++r) {
    sum += value_of(r, i);
    max = std::max(max, value_of(r, i));
  }
  if (op == ReduceOp::kMax) return max;
  if (op == ReduceOp::kSum) return sum;
  if (dtype == Dtype::kInt32) return static_cast<double>(static_cast<int64_t>(sum) / size);
  return sum / size;
}

bool close_enough(double got, double want, Dtype dtype) {
  double tolerance = dtype == Dtype::kFloat16 ? 2e-3 : dtype == Dtype::kFloat32 ? 1e-6 : 0;
  return std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want));
}

// A buffer with guard bytes on both sides: collectives must never write outside.
// Its memory is kept for the thread's next Guarded: a fresh vector of a few MiB for each
// of the thousands of cases faulted every page in anew, and on this project's VM, where
// a page fault traps to the hypervisor, that was half of this program's time: alone,
// 56 s before and 31 s after, as with glibc told to keep the memory it is given back.
class Guarded {
 public:
  explicit Guarded(size_t bytes) : bytes_(bytes), data_(take()) { data_.assign(bytes + 2 * kGuard, 0xA5); }
  ~Guarded() { spare().push_back(std::move(data_)); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  unsigned char* get() { return data_.data() + kGuard; }
  size_t bytes() const { return bytes_; }
  bool intact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (data_[i] != 0xA5 || data_[kGuard + bytes_ + i] != 0xA5) return false;
    }
    return true;
  }

 private:
  static constexpr size_t kGuard = 64;
  static std::vector<std::vector<unsigned char>>& spare() {
    thread_local std::vector<std::vector<unsigned char>> kept;
    return kept;
  }
  // The largest kept buffer, whose memory assign() reuses wherever the case's size fits.
  static std::vector<unsigned char> take() {
    auto& kept = spare();
    if (kept.empty()) return {};
    auto largest = std::max_element(kept.begin(), kept.end(),
                                    [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
    std::vector<unsigned char> taken = std::move(*largest);
    kept.erase(largest);
    return taken;
  }
  size_t bytes_;
  std::vector<unsigned char> data_;
};

// The first thing that went wrong on one rank, for the main thread to report.
struct Failures {
  std::vector<std::string> per_rank;
  void expect(int rank, bool ok, const std::string& what) {
    if (!ok && per_rank[rank].empty()) per_rank[rank] = what;
  }
  void assert_none() const {
    for (size_t r = 0; r < per_rank.size(); ++r) cr_assert(per_rank[r].empty(), "rank %zu: %s", r, per_rank[r].c_str());
  }
};

// `size` ranks as threads, each with its own client and Group (of slots of slot_bytes,
// when not 0).
struct Ranks {
  explicit Ranks(int n, size_t slot_bytes = 0) : size(n), groups(n), scratch(n), seq(n, 0) {
    for (int r = 0; r < n; ++r) wheres.push_back(tutti::concat("comm \"test\" (rank ", r, " of ", n, ")"));
    Failures failures{std::vector<std::string>(n)};
    for (int r = 0; r < n; ++r) clients.push_back(store.connect());
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          groups[r] = Group::create(*clients[r], "test/shm/", r, n, soon(), slot_bytes);
        } catch (const Error& e) {
          failures.expect(r, false, e.what());
        }
      });
    }
    for (auto& thread : threads) thread.join();
    failures.assert_none();
  }

  OpContext context(int rank, const char* name, int64_t timeout_ms = tt_timeout_ms(20000)) {
    OpContext context;
    context.name = name;
    context.seq = ++seq[rank];
    context.deadline = Deadline::after_ms(timeout_ms);
    context.timeout_ms = timeout_ms;
    context.fault = fault.get();
    context.where = wheres[rank];
    context.scratch = &scratch[rank];
    return context;
  }

  // Runs body(rank, failures) on one thread per rank; a tutti::Error is a failure too.
  void run(const std::function<void(int, Failures&)>& body) {
    Failures failures{std::vector<std::string>(size)};
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        try {
          body(r, failures);
        } catch (const Error& e) {
          failures.expect(r, false, e.what());
        }
      });
    }
    for (auto& thread : threads) thread.join();
    failures.assert_none();
  }

  int size;
  store_test::Store store;
  std::vector<std::unique_ptr<tutti::store::Client>> clients;
  std::vector<std::unique_ptr<Group>> groups;
  std::vector<Scratch> scratch;
  std::vector<std::string> wheres;  // what the contexts' where views
  std::vector<uint32_t> seq;
  // A fresh one after a test's abort, since a Fault stays raised.
  std::unique_ptr<Fault> fault = std::make_unique<Fault>();
};

std::string case_name(const char* what, size_t count, Dtype dtype, ReduceOp op, bool in_place) {
  return tutti::concat(what, " of ", count, " ", tutti::dtype_name(dtype), " ", tutti::reduce_op_name(op),
                       in_place ? " in place" : "");
}

// Checks recv against the reduction of elements [first, first + count) of every rank.
void check_reduced(Failures& failures, int rank, int size, const std::string& name, Guarded& recv, size_t count,
                   size_t first, Dtype dtype, ReduceOp op) {
  failures.expect(rank, recv.intact(), name + ": wrote outside the receive buffer");
  for (size_t i = 0; i < count; ++i) {
    double got = get(recv.get(), i, dtype), want = expected(dtype, op, size, first + i);
    if (!close_enough(got, want, dtype)) {
      failures.expect(rank, false, tutti::concat(name, ": element ", i, " is ", got, ", want ", want));
      return;
    }
  }
}

// Files in /dev/shm that a group of this process could have left.
std::vector<std::string> leftover_segments() {
  std::vector<std::string> found;
  std::string mine = tutti::concat("tutti-", getpid(), "-");
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) {
      if (std::strncmp(entry->d_name, mine.c_str(), mine.size()) == 0) found.push_back(entry->d_name);
    }
    closedir(dir);
  }
  return found;
}

unsigned char pattern(int rank, size_t i) { return static_cast<unsigned char>(rank * 37 + i * 11 + 1); }

// Where the buffers of a collective on memory from allocate_shared lie: all there (out
// of place or in place), or rank 1's send buffer, its receive buffer or both private.
struct Form {
  const char* name;
  bool in_place;
  bool private_source;
  bool private_result;
};
constexpr Form kForms[] = {
    {"out of place", false, false, false},
    {"in place", true, false, false},
    {"rank 1's send buffer in private memory", false, true, false},
    {"rank 1's result in private memory", false, false, true},
    {"rank 1's send buffer and result in private memory", false, true, true},
};

}  // namespace

Test(shm_group, all_reduce_every_size_dtype_op_and_count, .timeout = 300) {
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (Dtype dtype : kDtypes) {
        for (ReduceOp op : kOps) {
          for (size_t count : kCounts) {
            for (bool in_place : {false, true}) {
              size_t bytes = count * tutti::dtype_size(dtype);
              Guarded send(bytes), recv(bytes);
              for (size_t i = 0; i < count; ++i) put(send.get(), i, dtype, value_of(rank, i));
              if (in_place) std::memcpy(recv.get(), send.get(), bytes);
              OpContext context = ranks.context(rank, "all_reduce");
              ranks.groups[rank]->all_reduce(in_place ? recv.get() : send.get(), recv.get(), count, dtype, op, context);
              std::string name = case_name("all_reduce", count, dtype, op, in_place);
              check_reduced(failures, rank, size, name, recv, count, 0, dtype, op);
              failures.expect(rank, send.intact(), name + ": wrote outside the send buffer");
            }
          }
        }
      }
    });
  }
}

Test(shm_group, reduce_lands_on_root_only, .timeout = 300) {
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (int root : {0, size - 1}) {
        for (Dtype dtype : kDtypes) {
          for (ReduceOp op : kOps) {
            for (size_t count : kCounts) {
              for (bool in_place : {false, true}) {
                size_t bytes = count * tutti::dtype_size(dtype);
                Guarded send(bytes), recv(bytes);
                for (size_t i = 0; i < count; ++i) put(send.get(), i, dtype, value_of(rank, i));
                bool root_in_place = in_place && rank == root;
                if (root_in_place) std::memcpy(recv.get(), send.get(), bytes);
                OpContext context = ranks.context(rank, "reduce");
                ranks.groups[rank]->reduce(root_in_place ? recv.get() : send.get(), rank == root ? recv.get() : nullptr,
                                           count, dtype, op, root, context);
                if (rank != root) continue;
                check_reduced(failures, rank, size, case_name("reduce", count, dtype, op, in_place), recv, count, 0,
                              dtype, op);
              }
            }
          }
        }
      }
    });
  }
}

Test(shm_group, reduce_scatter_every_size_dtype_op_and_count, .timeout = 300) {
  const size_t counts[] = {0, 1, 7, 300001};
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (Dtype dtype : kDtypes) {
        for (ReduceOp op : kOps) {
          for (size_t count : counts) {
            for (bool in_place : {false, true}) {
              size_t unit = tutti::dtype_size(dtype);
              Guarded send(count * unit * size), recv(count * unit);
              for (size_t i = 0; i < count * size; ++i) put(send.get(), i, dtype, value_of(rank, i));
              unsigned char* out = in_place ? send.get() + rank * count * unit : recv.get();
              OpContext context = ranks.context(rank, "reduce_scatter");
              ranks.groups[rank]->reduce_scatter(send.get(), out, count, dtype, op, context);
              std::string name = case_name("reduce_scatter", count, dtype, op, in_place);
              if (in_place) std::memcpy(recv.get(), out, count * unit);
              check_reduced(failures, rank, size, name, recv, count, rank * count, dtype, op);
              failures.expect(rank, send.intact(), name + ": wrote outside the send buffer");
            }
          }
        }
      }
    });
  }
}

Test(shm_group, broadcast_from_any_root, .timeout = 120) {
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (int root : {0, size / 2, size - 1}) {
        for (size_t bytes : kBlockBytes) {
          Guarded buffer(bytes);
          for (size_t i = 0; i < bytes; ++i) buffer.get()[i] = rank == root ? pattern(root, i) : 0;
          OpContext context = ranks.context(rank, "broadcast");
          ranks.groups[rank]->broadcast(buffer.get(), bytes, root, context);
          std::string name = tutti::concat("broadcast of ", bytes, " bytes from ", root);
          failures.expect(rank, buffer.intact(), name + ": wrote outside the buffer");
          for (size_t i = 0; i < bytes; ++i) {
            if (buffer.get()[i] != pattern(root, i)) {
              failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
              break;
            }
          }
        }
      }
    });
  }
}

// all_gather, and gather at two roots, in both forms: every block of the result checked.
Test(shm_group, all_gather_and_gather, .timeout = 120) {
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (int root : {-1, 0, size - 1}) {
        for (size_t bytes : kBlockBytes) {
          for (bool in_place : {false, true}) {
            Guarded send(bytes), recv(bytes * size);
            // In place only where this rank receives: every rank for all_gather, root for gather.
            bool receives = root < 0 || rank == root;
            unsigned char* mine = in_place && receives ? recv.get() + rank * bytes : send.get();
            for (size_t i = 0; i < bytes; ++i) mine[i] = pattern(rank, i);
            OpContext context = ranks.context(rank, root < 0 ? "all_gather" : "gather");
            if (root < 0) {
              ranks.groups[rank]->all_gather(mine, recv.get(), bytes, context);
            } else {
              ranks.groups[rank]->gather(mine, receives ? recv.get() : nullptr, bytes, root, context);
              if (!receives) continue;
            }
            std::string name = tutti::concat(context.name, " of ", bytes, " bytes", in_place ? " in place" : "");
            failures.expect(rank, recv.intact() && send.intact(), name + ": wrote outside a buffer");
            for (int r = 0; r < size; ++r) {
              for (size_t i = 0; i < bytes; ++i) {
                if (recv.get()[r * bytes + i] != pattern(r, i)) {
                  failures.expect(rank, false, tutti::concat(name, ": byte ", i, " of rank ", r, "'s block differs"));
                  break;
                }
              }
            }
          }
        }
      }
    });
  }
}

// One all_gather of `bytes` a rank on every rank, a pattern that changes with `call`,
// in place on odd calls; every block of the result checked.
void all_gather_checked(Ranks& ranks, int rank, Failures& failures, size_t bytes, int call) {
  const int size = ranks.size;
  const bool in_place = call % 2 == 1;
  Guarded send(bytes), recv(bytes * size);
  unsigned char* mine = in_place ? recv.get() + rank * bytes : send.get();
  for (size_t i = 0; i < bytes; ++i) mine[i] = pattern(rank + call, i);
  OpContext context = ranks.context(rank, "all_gather");
  ranks.groups[rank]->all_gather(mine, recv.get(), bytes, context);
  std::string name = tutti::concat("all_gather of ", bytes, " bytes, call ", call, in_place ? " in place" : "");
  failures.expect(rank, recv.intact() && send.intact(), name + ": wrote outside a buffer");
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < bytes; ++i) {
      if (recv.get()[r * bytes + i] != pattern(r + call, i)) {
        failures.expect(rank, false, tutti::concat(name, ": byte ", i, " of rank ", r, "'s block differs"));
        break;
      }
    }
  }
}

// One all_to_all, whose block j of rank r's send carries (r, j, call); every block of
// the result checked.
void all_to_all_once(Ranks& ranks, int rank, Failures& failures, size_t bytes, int call, bool in_place) {
  const int size = ranks.size;
  auto byte_of = [&](int from, int to, size_t i) {
    return static_cast<unsigned char>(from * 29 + to * 7 + i * 13 + call);
  };
  Guarded send(bytes * size), recv(bytes * size);
  unsigned char* in = in_place ? recv.get() : send.get();
  for (int to = 0; to < size; ++to) {
    for (size_t i = 0; i < bytes; ++i) in[to * bytes + i] = byte_of(rank, to, i);
  }
  OpContext context = ranks.context(rank, "all_to_all");
  ranks.groups[rank]->all_to_all(in, recv.get(), bytes, context);
  std::string name = tutti::concat("all_to_all of ", bytes, " bytes, call ", call, in_place ? " in place" : "");
  failures.expect(rank, recv.intact() && send.intact(), name + ": wrote outside a buffer");
  for (int from = 0; from < size; ++from) {
    for (size_t i = 0; i < bytes; ++i) {
      if (recv.get()[from * bytes + i] != byte_of(from, rank, i)) {
        failures.expect(rank, false, tutti::concat(name, ": byte ", i, " from rank ", from, " differs"));
        break;
      }
    }
  }
}

// In place on the odd calls of rank 1 only, so that the ranks differ in that.
void all_to_all_checked(Ranks& ranks, int rank, Failures& failures, size_t bytes, int call) {
  all_to_all_once(ranks, rank, failures, bytes, call, call % 2 == 1 && rank == 1);
}

// One scatter, from rank 0 on even calls and from the last rank on odd ones, in place
// there (never from rank 1 of more than 2, which the fallback test keeps from reading:
// as a root it would read nothing); the block checked.
void scatter_checked(Ranks& ranks, int rank, Failures& failures, size_t bytes, int call) {
  const int size = ranks.size;
  const int root = call % 2 == 0 ? 0 : size - 1;
  const bool in_place = call % 2 == 1 && rank == root;
  Guarded send(bytes * size), recv(bytes);
  if (rank == root) {
    for (int to = 0; to < size; ++to) {
      for (size_t i = 0; i < bytes; ++i) send.get()[to * bytes + i] = pattern(to + call, i);
    }
  }
  unsigned char* out = in_place ? send.get() + root * bytes : recv.get();
  OpContext context = ranks.context(rank, "scatter");
  ranks.groups[rank]->scatter(rank == root ? send.get() : nullptr, out, bytes, root, context);
  std::string name =
      tutti::concat("scatter of ", bytes, " bytes from ", root, ", call ", call, in_place ? " in place" : "");
  failures.expect(rank, recv.intact() && send.intact(), name + ": wrote outside a buffer");
  for (size_t i = 0; i < bytes; ++i) {
    if (out[i] != pattern(rank + call, i)) {
      failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
      break;
    }
  }
}

// One broadcast, from rank 0 on even calls and from the last rank on odd ones (never
// from rank 1 of more than 2, as scatter_checked); the buffer checked.
void broadcast_checked(Ranks& ranks, int rank, Failures& failures, size_t bytes, int call) {
  const int root = call % 2 == 0 ? 0 : ranks.size - 1;
  Guarded buffer(bytes);
  for (size_t i = 0; i < bytes; ++i) buffer.get()[i] = rank == root ? pattern(root + call, i) : 0;
  OpContext context = ranks.context(rank, "broadcast");
  ranks.groups[rank]->broadcast(buffer.get(), bytes, root, context);
  std::string name = tutti::concat("broadcast of ", bytes, " bytes from ", root, ", call ", call);
  failures.expect(rank, buffer.intact(), name + ": wrote outside the buffer");
  for (size_t i = 0; i < bytes; ++i) {
    if (buffer.get()[i] != pattern(root + call, i)) {
      failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
      break;
    }
  }
}

using CheckedCall = void (*)(Ranks&, int, Failures&, size_t, int);
// The collectives that may read peers, and the bytes a rank from which and below which
// they may (group_peer_reads.cc, group_copy.cc).
struct ReadingPeers {
  const char* what;
  CheckedCall checked;
  size_t from;
  size_t below;
};
const ReadingPeers kReadingPeers[] = {
    {"all_gather", all_gather_checked, size_t{16} << 10, SIZE_MAX},
    {"all_to_all", all_to_all_checked, size_t{16} << 10, SIZE_MAX},
    {"scatter", scatter_checked, size_t{16} << 10, SIZE_MAX},
    {"broadcast", broadcast_checked, size_t{64} << 10, size_t{1} << 20},
};

// all_gather, all_to_all, scatter and broadcast of private blocks from 16 KiB a rank
// (broadcast: from 64 KiB to under 1 MiB), where every rank has a CPU
// (TUTTI_CPU_PER_RANK=yes: this machine may have fewer than the ranks): rank 0 times
// the slots and reading the peers' memory (group_peer_reads.cc), and the first calls of
// a size take each in turn, so a few calls of each size read peers at least once
// (all_to_all on the calls where no rank is in place); outside those sizes none does.
Test(shm_group, data_movers_read_private_blocks_from_peers, .timeout = 120) {
  setenv("TUTTI_CPU_PER_RANK", "yes", 1);
  for (const ReadingPeers& reading : kReadingPeers) {
    const char* what = reading.what;
    for (int size : {2, 3, 4, 8}) {
      Ranks ranks(size);
      ranks.run([&](int rank, Failures& failures) {
        const Group& group = *ranks.groups[rank];
        for (int call = 0; call < 6; ++call) reading.checked(ranks, rank, failures, reading.from - 1, call);
        failures.expect(rank, group.peer_read_runs() == 0,
                        tutti::concat("a block of ", what, " under ", reading.from, " bytes was read"));
        // Each in a size class of its own (a power of two), whose first calls try both forms.
        for (size_t bytes : {reading.from, 2 * reading.from + 3, size_t{300001}}) {
          const uint64_t runs = group.peer_read_runs();
          for (int call = 0; call < 8; ++call) reading.checked(ranks, rank, failures, bytes, call);
          failures.expect(rank, group.peer_read_runs() > runs,
                          tutti::concat("no ", what, " of ", bytes, " bytes a rank read its peers"));
        }
        if (reading.below != SIZE_MAX) {
          const uint64_t runs = group.peer_read_runs();
          for (int call = 0; call < 4; ++call) reading.checked(ranks, rank, failures, reading.below, call);
          failures.expect(rank, group.peer_read_runs() == runs,
                          tutti::concat("a block of ", what, " of ", reading.below, " bytes was read"));
        }
      });
      for (int r = 1; r < size; ++r) {
        cr_assert_eq(ranks.groups[r]->peer_read_runs(), ranks.groups[0]->peer_read_runs(), "%s", what);
      }
    }
  }
}

// Where ranks share CPUs (TUTTI_CPU_PER_RANK=no says so whatever this machine's CPUs),
// which the first call that could read peers finds out on every rank alike, all_gather
// and broadcast keep to the slots, and all_to_all and scatter read peers only from 64
// and 128 KiB a rank.
Test(shm_group, data_movers_read_fewer_peers_where_ranks_share_cpus, .timeout = 60) {
  setenv("TUTTI_CPU_PER_RANK", "no", 1);
  Ranks ranks(2);
  ranks.run([&](int rank, Failures& failures) {
    const Group& group = *ranks.groups[rank];
    for (int call = 0; call < 6; ++call) all_gather_checked(ranks, rank, failures, 100000, call);
    failures.expect(rank, group.peer_read_runs() == 0, "all_gather read peers on ranks that share CPUs");
    for (int call = 0; call < 8; ++call) all_to_all_checked(ranks, rank, failures, 40000, call);
    failures.expect(rank, group.peer_read_runs() == 0, "an all_to_all of 40000 bytes a rank read peers sharing CPUs");
    for (int call = 0; call < 8; ++call) all_to_all_checked(ranks, rank, failures, 100000, call);
    const uint64_t runs = group.peer_read_runs();
    failures.expect(rank, runs > 0, "all_to_all did not read peers on ranks that share CPUs");
    for (int call = 0; call < 8; ++call) scatter_checked(ranks, rank, failures, 40000, call);
    failures.expect(rank, group.peer_read_runs() == runs, "a scatter of 40000 bytes a rank read peers sharing CPUs");
    for (int call = 0; call < 8; ++call) scatter_checked(ranks, rank, failures, 200000, call);
    failures.expect(rank, group.peer_read_runs() > runs, "scatter did not read peers on ranks that share CPUs");
    const uint64_t scattered = group.peer_read_runs();
    for (int call = 0; call < 8; ++call) broadcast_checked(ranks, rank, failures, 200000, call);
    failures.expect(rank, group.peer_read_runs() == scattered, "a broadcast read root's buffer on ranks sharing CPUs");
  });
}

// Makes process_vm_readv fail with EPERM on the calling thread from now on, as a
// container's seccomp profile does; false if the kernel did not take the filter.
bool refuse_reading_other_processes() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// A rank that the kernel does not let read its peers: the call it fails in runs again
// through the slots on every rank, with the right result, and no rank reads a peer
// again. 70 calls of one size take each form at least twice (timed_choice.h tries the
// other form every 32nd call).
Test(shm_group, data_movers_fall_back_to_the_slots_when_a_rank_cannot_read_peers, .timeout = 120) {
  constexpr size_t kBytes = 100000;
  setenv("TUTTI_CPU_PER_RANK", "yes", 1);
  for (const auto& [what, checked, from, below] : kReadingPeers) {
    Ranks ranks(3);
    ranks.run([&](int rank, Failures& failures) {
      const Group& group = *ranks.groups[rank];
      for (int call = 0; call < 8; ++call) checked(ranks, rank, failures, kBytes, call);
      const uint64_t runs = group.peer_read_runs();
      failures.expect(rank, runs > 0, tutti::concat("no ", what, " read its peers before the refusal"));
      if (rank == 1) {
        failures.expect(rank, refuse_reading_other_processes(),
                        tutti::concat("cannot install the seccomp filter: ", std::strerror(errno)));
      }
      for (int call = 8; call < 78; ++call) checked(ranks, rank, failures, kBytes, call);
      failures.expect(rank, group.peer_read_runs() == runs,
                      tutti::concat(group.peer_read_runs() - runs, " ", what, "s read peers after the refusal"));
    });
  }
}

Test(shm_group, scatter_from_two_roots, .timeout = 120) {
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (int root : {0, size - 1}) {
        for (size_t bytes : kBlockBytes) {
          for (bool in_place : {false, true}) {
            Guarded send(bytes * size), recv(bytes);
            if (rank == root) {
              for (int r = 0; r < size; ++r) {
                for (size_t i = 0; i < bytes; ++i) send.get()[r * bytes + i] = pattern(r, i);
              }
            }
            bool root_in_place = in_place && rank == root;
            unsigned char* out = root_in_place ? send.get() + root * bytes : recv.get();
            OpContext context = ranks.context(rank, "scatter");
            ranks.groups[rank]->scatter(rank == root ? send.get() : nullptr, out, bytes, root, context);
            std::string name = tutti::concat("scatter of ", bytes, " bytes from ", root, in_place ? " in place" : "");
            failures.expect(rank, recv.intact() && send.intact(), name + ": wrote outside a buffer");
            for (size_t i = 0; i < bytes; ++i) {
              if (out[i] != pattern(rank, i)) {
                failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
                break;
              }
            }
          }
        }
      }
    });
  }
}

Test(shm_group, all_to_all_both_forms, .timeout = 120) {
  for (int size : kRankCounts) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (size_t bytes : kBlockBytes) {
        for (bool in_place : {false, true}) all_to_all_once(ranks, rank, failures, bytes, 0, in_place);
      }
    });
  }
}

// Past about 500 ranks a slot has no cache line for every rank: reduce_scatter and
// all_to_all then serve the ranks in rounds of steps, a slot's worth of ranks each.
// Slots of two lines take that path at 3 to 8 ranks (rounds of 2 ranks), in place too
// (an all_to_all in place then puts from a copy: an early round's rank would overwrite
// what it has yet to put). And the layout of such groups grows with the ranks, not
// their square.
Test(shm_group, ranks_served_in_rounds_where_a_slot_is_too_small, .timeout = 120) {
  constexpr size_t kTwoLines = 2 * tutti::transport::shm::kCacheLine;
  for (int size : {3, 5, 8}) {
    Ranks ranks(size, kTwoLines);
    ranks.run([&](int rank, Failures& failures) {
      for (Dtype dtype : {Dtype::kFloat32, Dtype::kFloat16}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}}) {
          for (bool in_place : {false, true}) {
            size_t unit = tutti::dtype_size(dtype);
            Guarded send(count * unit * size), recv(count * unit);
            for (size_t i = 0; i < count * size; ++i) put(send.get(), i, dtype, value_of(rank, i));
            unsigned char* out = in_place ? send.get() + rank * count * unit : recv.get();
            ranks.groups[rank]->reduce_scatter(send.get(), out, count, dtype, ReduceOp::kSum,
                                               ranks.context(rank, "reduce_scatter"));
            std::string name = case_name("reduce_scatter in rounds", count, dtype, ReduceOp::kSum, in_place);
            if (in_place) std::memcpy(recv.get(), out, count * unit);
            check_reduced(failures, rank, size, name, recv, count, rank * count, dtype, ReduceOp::kSum);
          }
        }
      }
      auto byte_of = [](int from, int to, size_t i) { return static_cast<unsigned char>(from * 29 + to * 7 + i * 13); };
      for (size_t bytes : {size_t{1}, size_t{64}, size_t{1000}}) {
        for (bool in_place : {false, true}) {
          Guarded send(bytes * size), recv(bytes * size);
          unsigned char* in = in_place ? recv.get() : send.get();
          for (int to = 0; to < size; ++to) {
            for (size_t i = 0; i < bytes; ++i) in[to * bytes + i] = byte_of(rank, to, i);
          }
          ranks.groups[rank]->all_to_all(in, recv.get(), bytes, ranks.context(rank, "all_to_all"));
          for (int from = 0; from < size; ++from) {
            for (size_t i = 0; i < bytes; ++i) {
              if (recv.get()[from * bytes + i] != byte_of(from, rank, i)) {
                failures.expect(rank, false,
                                tutti::concat("all_to_all in rounds of ", bytes, " bytes", in_place ? " in place" : "",
                                              ": byte ", i, " from rank ", from, " differs"));
                break;
              }
            }
          }
        }
      }
    });
  }
  using tutti::transport::shm::Layout;
  // 36 KiB a rank from 2,048 ranks on (146 MiB at 4,096, where slots of a cache line
  // per rank made 8.1 GiB), mostly the ranks' step entries, notes and cells.
  for (int size : {1024, 4096, 8192}) {
    Layout layout = Layout::for_size(size);
    cr_expect_leq(layout.total_bytes / size, size_t{64} << 10, "%d ranks: a segment of %zu bytes", size,
                  layout.total_bytes);
  }
}

// Collectives of every shape back to back, in an order all ranks draw from one seed,
// so that each reuses slots, result areas and step entries the one before just used.
Test(shm_group, mixed_sequence_reuses_buffers_safely, .timeout = 120) {
  for (int size : {2, 3, 4}) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      uint64_t state = 12345;
      auto next = [&state] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
      };
      const size_t counts[] = {1, 14, 15, 3000, 70001, 300000};
      for (int iteration = 0; iteration < 200; ++iteration) {
        size_t count = counts[next() % std::size(counts)];
        int kind = static_cast<int>(next() % 4);
        Guarded send(count * 4 * size), recv(count * 4 * size);
        for (size_t i = 0; i < count * size; ++i) put(send.get(), i, Dtype::kFloat32, value_of(rank, i + iteration));
        std::string name = tutti::concat("step ", iteration, " (kind ", kind, ", count ", count, ")");
        if (kind == 0) {
          OpContext context = ranks.context(rank, "all_reduce");
          ranks.groups[rank]->all_reduce(send.get(), recv.get(), count, Dtype::kFloat32, ReduceOp::kSum, context);
          for (size_t i = 0; i < count; ++i) {
            double want = 0;
            for (int r = 0; r < size; ++r) want += value_of(r, i + iteration);
            if (get(recv.get(), i, Dtype::kFloat32) != want) {
              failures.expect(rank, false, tutti::concat(name, ": element ", i, " differs"));
              break;
            }
          }
        } else if (kind == 1) {
          OpContext context = ranks.context(rank, "broadcast");
          ranks.groups[rank]->broadcast(send.get(), count * 4, iteration % size, context);
          for (size_t i = 0; i < count; ++i) {
            if (get(send.get(), i, Dtype::kFloat32) != value_of(iteration % size, i + iteration)) {
              failures.expect(rank, false, tutti::concat(name, ": element ", i, " differs"));
              break;
            }
          }
        } else if (kind == 2) {
          OpContext context = ranks.context(rank, "all_gather");
          ranks.groups[rank]->all_gather(send.get(), recv.get(), count * 4, context);
          for (int r = 0; r < size; ++r) {
            if (get(recv.get(), r * count + count - 1, Dtype::kFloat32) != value_of(r, count - 1 + iteration)) {
              failures.expect(rank, false, tutti::concat(name, ": rank ", r, "'s block differs"));
            }
          }
        } else {
          OpContext context = ranks.context(rank, "barrier");
          ranks.groups[rank]->barrier(context);
        }
        failures.expect(rank, send.intact() && recv.intact(), name + ": wrote outside a buffer");
      }
    });
  }
}

// One-sided collectives (broadcast, gather, scatter, reduce of a few KiB: their owners
// publish and return)
// back to back with symmetric ones, roots and sizes changing every call, while a rank
// drawn per call lags behind: an owner goes on to its next collectives, of any kind,
// while a reader is still to copy. Sizes from data riding in a step entry to several
// chunks; every result is checked, so a collective that overwrote memory a slow
// reader had not copied yet fails here.
Test(shm_group, one_sided_collectives_overlap_safely_with_slow_ranks, .timeout = 120) {
  // Byte i of rank r's block in call k.
  auto item = [](int call, int rank, size_t i) { return static_cast<unsigned char>(pattern(rank, i) + call * 13); };
  for (int size : {2, 3, 4}) {
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      uint64_t state = 777;  // the same draws on every rank
      auto next = [&state] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return state >> 33;
      };
      // In a step entry, in its note, in its cell, in a slot, in several chunks.
      const size_t sizes[] = {1,    kInlineBytes, kInlineBytes + 1, Layout::kNoteBytes, Layout::kNoteBytes + 1, 1000,
                              5000, 300001,       1200001};
      for (int call = 0; call < 400; ++call) {
        size_t bytes = sizes[next() % std::size(sizes)];
        int kind = static_cast<int>(next() % 7);
        int root = static_cast<int>(next() % size);
        int slow = static_cast<int>(next() % size);
        unsigned lag_us = static_cast<unsigned>(next() % 300);
        if (rank == slow && lag_us >= 100) std::this_thread::sleep_for(std::chrono::microseconds(lag_us));
        if (rank == slow && lag_us < 100) std::this_thread::yield();
        Guarded send(std::max<size_t>(bytes, 4) * size), recv(std::max<size_t>(bytes, 4) * size);
        std::string name = tutti::concat("call ", call, " (kind ", kind, ", ", bytes, " bytes, root ", root, ")");
        auto expect_block = [&](const unsigned char* got, int from, const char* what) {
          for (size_t i = 0; i < bytes; ++i) {
            if (got[i] != item(call, from, i)) {
              failures.expect(rank, false, tutti::concat(name, ": byte ", i, " of ", what, " differs"));
              return;
            }
          }
        };
        if (kind == 0) {
          OpContext context = ranks.context(rank, "broadcast");
          for (size_t i = 0; i < bytes; ++i) recv.get()[i] = rank == root ? item(call, root, i) : 0;
          ranks.groups[rank]->broadcast(recv.get(), bytes, root, context);
          expect_block(recv.get(), root, "the broadcast");
        } else if (kind == 1) {
          OpContext context = ranks.context(rank, "gather");
          for (size_t i = 0; i < bytes; ++i) send.get()[i] = item(call, rank, i);
          ranks.groups[rank]->gather(send.get(), rank == root ? recv.get() : nullptr, bytes, root, context);
          if (rank == root) {
            for (int r = 0; r < size; ++r) expect_block(recv.get() + r * bytes, r, "a gathered block");
          }
        } else if (kind == 2) {
          OpContext context = ranks.context(rank, "scatter");
          for (int r = 0; r < size && rank == root; ++r) {
            for (size_t i = 0; i < bytes; ++i) send.get()[r * bytes + i] = item(call, r, i);
          }
          ranks.groups[rank]->scatter(rank == root ? send.get() : nullptr, recv.get(), bytes, root, context);
          expect_block(recv.get(), rank, "the scattered block");
        } else if (kind == 3) {
          size_t count = std::max<size_t>(bytes / 4, 1);
          OpContext context = ranks.context(rank, "all_reduce");
          for (size_t i = 0; i < count; ++i) put(send.get(), i, Dtype::kInt32, value_of(rank, i + call));
          ranks.groups[rank]->all_reduce(send.get(), recv.get(), count, Dtype::kInt32, ReduceOp::kSum, context);
          for (size_t i = 0; i < count; ++i) {
            double want = 0;
            for (int r = 0; r < size; ++r) want += value_of(r, i + call);
            if (get(recv.get(), i, Dtype::kInt32) != want) {
              failures.expect(rank, false, tutti::concat(name, ": element ", i, " of the all_reduce differs"));
              break;
            }
          }
        } else if (kind == 4) {
          OpContext context = ranks.context(rank, "all_gather");
          for (size_t i = 0; i < bytes; ++i) send.get()[i] = item(call, rank, i);
          ranks.groups[rank]->all_gather(send.get(), recv.get(), bytes, context);
          for (int r = 0; r < size; ++r) expect_block(recv.get() + r * bytes, r, "an all_gathered block");
        } else if (kind == 5) {
          // One-sided: up to a cell's worth through the cells, past it chunk by chunk
          // through the slots (300001 bytes: two chunks, 1200001: five).
          size_t count = std::max<size_t>(bytes / 4, 1);
          OpContext context = ranks.context(rank, "reduce");
          for (size_t i = 0; i < count; ++i) put(send.get(), i, Dtype::kInt32, value_of(rank, i + call));
          ranks.groups[rank]->reduce(send.get(), recv.get(), count, Dtype::kInt32, ReduceOp::kSum, root, context);
          for (size_t i = 0; i < count && rank == root; ++i) {
            double want = 0;
            for (int r = 0; r < size; ++r) want += value_of(r, i + call);
            if (get(recv.get(), i, Dtype::kInt32) != want) {
              failures.expect(rank, false, tutti::concat(name, ": element ", i, " of the reduce differs"));
              break;
            }
          }
        } else {
          OpContext context = ranks.context(rank, "barrier");
          ranks.groups[rank]->barrier(context);
        }
        failures.expect(rank, send.intact() && recv.intact(), name + ": wrote outside a buffer");
      }
    });
  }
}

// A mismatch in a one-sided collective ends with kMismatch on every rank, long before
// the deadline and with every buffer intact: the ranks that compare find it at once,
// and a root that returned before anyone compared finds it at its next collective
// (readers that found it announce it; the shapes it compares are folded with the ones
// before).
Test(shm_group, one_sided_mismatch_reaches_every_rank, .timeout = 120) {
  struct Case {
    const char* what;
    // The call of `rank`, which may differ between ranks, on a buffer of 400000 bytes.
    std::function<void(Group&, int rank, unsigned char* buffer, const OpContext&)> call;
  };
  const Case cases[] = {
      {"broadcast where rank 2 passes another count",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.broadcast(buffer, rank == 2 ? 101 : 100, 0, context);
       }},
      {"inline broadcast where every rank takes itself for the root",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.broadcast(buffer, 8, rank, context);
       }},
      {"gather where every rank takes itself for the root",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.gather(buffer, buffer + 1000, 8, rank, context);
       }},
      {"gather where rank 1 sends a larger block",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.gather(buffer, buffer + 1000, rank == 1 ? 64 : 16, 0, context);
       }},
      {"reduce where every rank takes itself for the root",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.reduce(buffer, buffer + 1000, 2, Dtype::kInt32, ReduceOp::kSum, rank, context);
       }},
      {"reduce where rank 1 passes a larger count",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.reduce(buffer, buffer + 10000, rank == 1 ? 200 : 100, Dtype::kInt32, ReduceOp::kSum, 0, context);
       }},
      {"chunked scatter where rank 1 expects an inline block",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         group.scatter(buffer, buffer + 300000, rank == 1 ? 8 : 100000, 0, context);
       }},
      {"broadcast where rank 1 calls all_reduce",
       [](Group& group, int rank, unsigned char* buffer, const OpContext& context) {
         if (rank == 1) {
           group.all_reduce(buffer, buffer + 100, 2, Dtype::kInt32, ReduceOp::kSum, context);
         } else {
           group.broadcast(buffer, 8, 0, context);
         }
       }},
  };
  for (const Case& c : cases) {
    Ranks ranks(3);
    ranks.run([&](int rank, Failures& failures) {
      Guarded buffer(400000);
      auto start = store_test::Clock::now();
      OpContext context = ranks.context(rank, "first", tt_timeout_ms(20000));
      Error error(Status::kOk, "");
      try {
        c.call(*ranks.groups[rank], rank, buffer.get(), context);
        // Returned before anyone compared: the next collective finds it.
        context = ranks.context(rank, "barrier", tt_timeout_ms(20000));
        error = store_test::error_of([&] { ranks.groups[rank]->barrier(context); });
      } catch (const Error& e) {
        error = e;
      }
      std::string what = tutti::concat(c.what, ": ", error.what());
      failures.expect(rank, error.status() == Status::kMismatch, what);
      failures.expect(rank, contains(error.what(), "every rank must make the same calls"), what);
      failures.expect(rank, ms_since(start) < tt_timeout_ms(5000),
                      tutti::concat(what, " after ", ms_since(start), " ms"));
      failures.expect(rank, buffer.intact(), tutti::concat(c.what, ": wrote outside the buffer"));
    });
  }
}

// A broadcast's root returns once its data is published, and runs ahead of readers
// that have not come yet, up to a limit: one call per step entry while its data fits
// in an entry, its note or its cell, two calls (the two slots) above, up to the band
// where it may read the root's buffer instead (group_copy.cc), in which the root waits
// for its readers. The call past the limit waits until the readers have left the
// first, and that wait, too, ends at an abort. The readers, coming only after the
// root's call has ended so, still get every broadcast the root published, and are
// ended by the abort in the next; every group then refuses what comes after.
Test(shm_group, abort_while_a_root_that_returned_waits_for_its_readers, .timeout = 60) {
  struct Limit {
    size_t bytes;
    int published;
  };
  const int entries = static_cast<int>(tutti::transport::shm::kStepEntries);
  for (Limit limit : {Limit{8, entries}, Limit{20, entries}, Limit{3000, entries}, Limit{40000, 2}}) {
    Ranks ranks(3);
    std::atomic<bool> root_returned{false};
    std::thread aborter([&] {
      while (!root_returned) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ranks.fault->raise(Status::kAborted, "comm \"test\" was aborted (tutti_comm_abort)");
    });
    std::atomic<bool> root_ended{false};
    ranks.run([&](int rank, Failures& failures) {
      if (rank != 0) {
        while (!root_ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      for (int call = 0; call <= limit.published; ++call) {
        Guarded buffer(limit.bytes);
        for (size_t i = 0; i < limit.bytes; ++i) buffer.get()[i] = rank == 0 ? pattern(call, i) : 0;
        OpContext context = ranks.context(rank, "broadcast", tt_timeout_ms(30000));
        std::string name = tutti::concat("broadcast #", call + 1, " of ", limit.bytes, " bytes");
        if (call < limit.published) {
          ranks.groups[rank]->broadcast(buffer.get(), limit.bytes, 0, context);
          for (size_t i = 0; i < limit.bytes; ++i) {
            if (buffer.get()[i] != pattern(call, i)) {
              failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
              break;
            }
          }
          continue;
        }
        if (rank == 0) root_returned = true;
        auto start = store_test::Clock::now();
        Error error =
            store_test::error_of([&] { ranks.groups[rank]->broadcast(buffer.get(), limit.bytes, 0, context); });
        failures.expect(rank, error.status() == Status::kAborted, name + ": " + error.what());
        failures.expect(rank, ms_since(start) < tt_timeout_ms(2000),
                        tutti::concat(name, ": the abort took ", ms_since(start), " ms to end the wait"));
        if (rank == 0) root_ended = true;
      }
      OpContext context = ranks.context(rank, "barrier");
      Error error = store_test::error_of([&] { ranks.groups[rank]->barrier(context); });
      failures.expect(rank, error.status() == Status::kAborted && contains(error.what(), "unusable"), error.what());
    });
    aborter.join();
  }
}

// A bfloat16 and an int8 all_reduce through both paths: every dtype size goes through
// the slicing arithmetic.
// A reduce of a few KiB lets the ranks other than the root publish and return, as a
// broadcast's root does (above), up to one call per step entry ahead of the root; the
// call past that waits, and an abort ends the wait. The root, coming only after, still
// reduces every call they published, and is ended by the abort in the next.
Test(shm_group, reduce_senders_run_ahead_of_the_root_up_to_a_limit, .timeout = 60) {
  const int entries = static_cast<int>(tutti::transport::shm::kStepEntries);
  // 8 bytes ride in the step entry, 20 in its note, 3000 in its cell.
  for (size_t count : {size_t{2}, size_t{5}, size_t{750}}) {
    Ranks ranks(3);
    std::atomic<int> senders_at_limit{0}, senders_ended{0};
    std::thread aborter([&] {
      while (senders_at_limit < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ranks.fault->raise(Status::kAborted, "comm \"test\" was aborted (tutti_comm_abort)");
    });
    ranks.run([&](int rank, Failures& failures) {
      if (rank == 0) {
        while (senders_ended < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      Guarded send(count * 4), recv(count * 4);
      for (int call = 0; call <= entries; ++call) {
        for (size_t i = 0; i < count; ++i) put(send.get(), i, Dtype::kInt32, value_of(rank, i + call));
        OpContext context = ranks.context(rank, "reduce", tt_timeout_ms(30000));
        std::string name = tutti::concat("reduce #", call + 1, " of ", count, " int32");
        if (call < entries) {
          ranks.groups[rank]->reduce(send.get(), recv.get(), count, Dtype::kInt32, ReduceOp::kSum, 0, context);
          for (size_t i = 0; i < count && rank == 0; ++i) {
            double want = value_of(0, i + call) + value_of(1, i + call) + value_of(2, i + call);
            if (get(recv.get(), i, Dtype::kInt32) != want) {
              failures.expect(rank, false, tutti::concat(name, ": element ", i, " differs"));
              break;
            }
          }
          continue;
        }
        if (rank != 0) ++senders_at_limit;
        auto start = store_test::Clock::now();
        Error error = store_test::error_of([&] {
          ranks.groups[rank]->reduce(send.get(), recv.get(), count, Dtype::kInt32, ReduceOp::kSum, 0, context);
        });
        failures.expect(rank, error.status() == Status::kAborted, name + ": " + error.what());
        failures.expect(rank, ms_since(start) < tt_timeout_ms(2000),
                        tutti::concat(name, ": the abort took ", ms_since(start), " ms to end the wait"));
        if (rank != 0) ++senders_ended;
      }
      failures.expect(rank, send.intact() && recv.intact(), "wrote outside a buffer");
    });
    aborter.join();
  }
}

Test(shm_group, all_reduce_other_dtypes, .timeout = 60) {
  Ranks ranks(3);
  ranks.run([&](int rank, Failures& failures) {
    for (size_t count : {size_t{5}, size_t{70000}, size_t{600001}}) {
      std::vector<int8_t> bytes(count, static_cast<int8_t>(rank + 1)), summed(count);
      OpContext context = ranks.context(rank, "all_reduce");
      ranks.groups[rank]->all_reduce(bytes.data(), summed.data(), count, Dtype::kInt8, ReduceOp::kSum, context);
      failures.expect(rank, std::all_of(summed.begin(), summed.end(), [](int8_t v) { return v == 6; }),
                      tutti::concat("int8 all_reduce of ", count));
      std::vector<uint16_t> halves(count, tutti::float_to_bfloat16(rank + 0.5f)), maxed(count);
      context = ranks.context(rank, "all_reduce");
      ranks.groups[rank]->all_reduce(halves.data(), maxed.data(), count, Dtype::kBfloat16, ReduceOp::kMax, context);
      failures.expect(
          rank, std::all_of(maxed.begin(), maxed.end(), [](uint16_t v) { return tutti::bfloat16_to_float(v) == 2.5f; }),
          tutti::concat("bfloat16 all_reduce of ", count));
    }
  });
}

// From 4 MiB on (group_reduce.cc) the pipeline streams each rank's reduced slice into
// recv, 16 bytes at a time once the destination is aligned, line by line: receive
// buffers a few bytes off every alignment, and the root of a reduce next to ranks that
// receive nothing, still get every element and nothing past them. 1100003 elements
// take that path with 4-byte dtypes and the plain one with float16, at 3 ranks; at 2,
// 900001 take the chunk-by-chunk form. In place, each block is read whole before it is
// written back.
Test(shm_group, reductions_into_unaligned_buffers, .timeout = 120) {
  const std::pair<Dtype, ReduceOp> cases[] = {{Dtype::kFloat32, ReduceOp::kSum},
                                              {Dtype::kFloat32, ReduceOp::kAvg},
                                              {Dtype::kInt32, ReduceOp::kMax},
                                              {Dtype::kFloat16, ReduceOp::kSum}};
  for (const auto& shape : {std::pair{3, size_t{1100003}}, std::pair{2, size_t{900001}}}) {
    const int size = shape.first;
    const size_t count = shape.second;
    Ranks ranks(size);
    ranks.run([&](int rank, Failures& failures) {
      for (auto [dtype, op] : cases) {
        for (size_t shift : {size_t{2}, size_t{6}}) {
          const size_t bytes = count * tutti::dtype_size(dtype);
          Guarded send(bytes), shifted(bytes + shift), recv(bytes);
          for (size_t i = 0; i < count; ++i) put(send.get(), i, dtype, value_of(rank, i));
          for (int root : {-1, 1}) {
            for (bool in_place : {false, true}) {
              std::string name =
                  tutti::concat(case_name(root < 0 ? "all_reduce" : "reduce", count, dtype, op, in_place),
                                " into a buffer ", shift, " bytes off");
              unsigned char* out = shifted.get() + shift;
              std::memset(shifted.get(), 0xA5, shift);
              const bool receives = root < 0 || rank == root;
              if (in_place && receives) std::memcpy(out, send.get(), bytes);
              const unsigned char* in = in_place && receives ? out : send.get();
              OpContext context = ranks.context(rank, "reduce");
              if (root < 0) {
                ranks.groups[rank]->all_reduce(in, out, count, dtype, op, context);
              } else {
                ranks.groups[rank]->reduce(in, receives ? out : nullptr, count, dtype, op, root, context);
                if (!receives) continue;
              }
              const bool before_intact = std::all_of(shifted.get(), out, [](unsigned char b) { return b == 0xA5; });
              failures.expect(rank, before_intact, name + ": wrote before the receive buffer");
              failures.expect(rank, shifted.intact(), name + ": wrote past the receive buffer");
              std::memcpy(recv.get(), out, bytes);
              check_reduced(failures, rank, size, name, recv, count, 0, dtype, op);
            }
          }
        }
      }
    });
  }
}

// 2 ranks past 4 MiB: rank 0 picks the chunked form or the pipeline by their times
// (timed_choice.h; the first calls of a size take the pipeline twice, then the chunked
// form, the others either) and tells the other rank in a step of its own. Both must
// give the same results, whichever ran, for all_reduce and reduce, in and out of place.
Test(shm_group, two_ranks_past_4_mib_agree_on_a_timed_form, .timeout = 120) {
  constexpr size_t kCount = (size_t{5} << 20) / 4 + 3;  // 5 MiB of float32, and not whole chunks
  const std::pair<Dtype, ReduceOp> cases[] = {{Dtype::kFloat32, ReduceOp::kSum}, {Dtype::kInt32, ReduceOp::kMax}};
  Ranks ranks(2);
  ranks.run([&](int rank, Failures& failures) {
    for (auto [dtype, op] : cases) {
      const size_t bytes = kCount * tutti::dtype_size(dtype);
      Guarded send(bytes), recv(bytes);
      for (size_t i = 0; i < kCount; ++i) put(send.get(), i, dtype, value_of(rank, i));
      for (int call = 0; call < 4; ++call) {
        for (int root : {-1, 0, 1}) {
          const bool receives = root < 0 || rank == root;
          const bool in_place = call % 2 == 1 && receives;
          std::memset(recv.get(), 0, bytes);
          if (in_place) std::memcpy(recv.get(), send.get(), bytes);
          const unsigned char* in = in_place ? recv.get() : send.get();
          OpContext context = ranks.context(rank, root < 0 ? "all_reduce" : "reduce");
          if (root < 0) {
            ranks.groups[rank]->all_reduce(in, recv.get(), kCount, dtype, op, context);
          } else {
            ranks.groups[rank]->reduce(in, receives ? recv.get() : nullptr, kCount, dtype, op, root, context);
          }
          if (!receives) continue;
          std::string name = tutti::concat(case_name(root < 0 ? "all_reduce" : "reduce", kCount, dtype, op, in_place),
                                           ", call ", call + 1);
          check_reduced(failures, rank, 2, name, recv, kCount, 0, dtype, op);
        }
      }
    }
  });
}

// The most ranks the group is sized for: the segment stays bounded, and every shape runs.
Test(shm_group, sixty_four_ranks, .timeout = 120) {
  Ranks ranks(64);
  cr_assert_gt(ranks.groups[0]->mapped_bytes(), 0u);
  cr_assert_leq(ranks.groups[0]->mapped_bytes(), size_t{64} << 20);
  ranks.run([&](int rank, Failures& failures) {
    for (size_t count : {size_t{3}, size_t{3000}, size_t{100000}}) {
      Guarded send(count * 4), recv(count * 4);
      for (size_t i = 0; i < count; ++i) put(send.get(), i, Dtype::kFloat32, value_of(rank, i));
      OpContext context = ranks.context(rank, "all_reduce");
      ranks.groups[rank]->all_reduce(send.get(), recv.get(), count, Dtype::kFloat32, ReduceOp::kSum, context);
      check_reduced(failures, rank, 64, "all_reduce on 64 ranks", recv, count, 0, Dtype::kFloat32, ReduceOp::kSum);
    }
    for (size_t count : {size_t{3}, size_t{3000}}) {
      Guarded send(count * 4 * 64), recv(count * 4);
      for (size_t i = 0; i < count * 64; ++i) put(send.get(), i, Dtype::kFloat32, value_of(rank, i));
      OpContext context = ranks.context(rank, "reduce_scatter");
      ranks.groups[rank]->reduce_scatter(send.get(), recv.get(), count, Dtype::kFloat32, ReduceOp::kSum, context);
      check_reduced(failures, rank, 64, "reduce_scatter on 64 ranks", recv, count, rank * count, Dtype::kFloat32,
                    ReduceOp::kSum);
    }
    OpContext context = ranks.context(rank, "barrier");
    ranks.groups[rank]->barrier(context);
  });
}

// A rank waiting for a peer that never comes is ended by the abort flag within a few
// milliseconds, not at the deadline; the group then refuses every later collective.
Test(shm_group, abort_ends_a_wait_and_leaves_the_group_unusable, .timeout = 60) {
  Ranks ranks(2);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ranks.fault->raise(Status::kAborted, "comm \"test\" was aborted (tutti_comm_abort)");
  });
  float one = 1, out = 0;
  OpContext context = ranks.context(0, "all_reduce", tt_timeout_ms(30000));
  auto start = store_test::Clock::now();
  Error error = store_test::error_of(
      [&] { ranks.groups[0]->all_reduce(&one, &out, 1, Dtype::kFloat32, ReduceOp::kSum, context); });
  int64_t took = ms_since(start);
  aborter.join();
  cr_assert_eq(error.status(), Status::kAborted, "%s", error.what());
  cr_assert(contains(error.what(), "rank 1"), "%s", error.what());
  cr_assert(took < tt_timeout_ms(1000), "the abort took %lld ms to end the wait", static_cast<long long>(took));

  ranks.fault = std::make_unique<Fault>();
  context = ranks.context(0, "barrier");
  error = store_test::error_of([&] { ranks.groups[0]->barrier(context); });
  cr_assert_eq(error.status(), Status::kAborted);
  cr_assert(contains(error.what(), "unusable after all_reduce #1 on comm \"test\" (rank 0 of 2)"), "%s", error.what());
  cr_assert(contains(error.what(), "destroy the communicator"), "%s", error.what());
}

// The ranks that came wait for the one that did not until the deadline, and name it.
Test(shm_group, timeout_names_the_missing_rank, .timeout = 60) {
  Ranks ranks(3);
  ranks.run([&](int rank, Failures& failures) {
    if (rank == 2) return;
    OpContext context = ranks.context(rank, "barrier", 300);
    auto start = store_test::Clock::now();
    Error error = store_test::error_of([&] { ranks.groups[rank]->barrier(context); });
    failures.expect(rank, error.status() == Status::kTimeout, error.what());
    failures.expect(rank, contains(error.what(), "waiting for rank 2"), error.what());
    failures.expect(rank, ms_since(start) >= 250, tutti::concat("gave up after ", ms_since(start), " ms"));
  });
  // The failed barrier left the group's step counts out of step: it refuses what comes next.
  float data = 0;
  OpContext context = ranks.context(0, "all_reduce");
  Error error = store_test::error_of(
      [&] { ranks.groups[0]->all_reduce(&data, &data, 1, Dtype::kFloat32, ReduceOp::kSum, context); });
  cr_assert_eq(error.status(), Status::kAborted, "%s", error.what());
  cr_assert(contains(error.what(), "unusable after barrier #1"), "%s", error.what());
}

// 4,000,000 bytes at 2 ranks: 16 chunks of 256 KiB (group_reduce.cc's reduce_whole_chunks).
Test(shm_group, chunked_timeout_names_rank_and_chunk, .timeout = 60) {
  Ranks ranks(2);
  std::vector<float> data(1000000);
  OpContext context = ranks.context(0, "all_reduce", 300);
  Error error = store_test::error_of([&] {
    ranks.groups[0]->all_reduce(data.data(), data.data(), data.size(), Dtype::kFloat32, ReduceOp::kSum, context);
  });
  cr_assert_eq(error.status(), Status::kTimeout, "%s", error.what());
  cr_assert(contains(error.what(),
                     "all_reduce #1 on comm \"test\" (rank 0 of 2) timed out after 300 ms waiting for "
                     "rank 1's chunk 1 of 16"),
            "%s", error.what());
}

// Only segments of tutti's own naming, of this user and pid namespace, whose creator
// has died, are taken for abandoned; the rest of /dev/shm is never touched.
Test(shm_group, only_segments_of_dead_creators_are_removed, .timeout = 60) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  cr_assert(child > 0);
  waitpid(child, nullptr, 0);  // a pid of this namespace that no process has now
  struct stat own {};
  cr_assert_eq(stat("/proc/self/ns/pid", &own), 0);
  const std::string random = "0123456789abcdef";
  const std::string dead = tutti::concat("tutti-", child, "-", own.st_ino, "-", random);
  const std::vector<std::string> kept = {
      tutti::concat("tutti-", getpid(), "-", own.st_ino, "-", random),    // its creator lives
      tutti::concat("tutti-", child, "-", own.st_ino + 1, "-", random),   // another pid namespace
      tutti::concat("tutti-", child, "-", random),                        // not a name tutti makes
      tutti::concat("tutti-", child, "-", own.st_ino, "-", random, "x"),  // nor is this
  };
  for (const std::string& name : kept) cr_assert(shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600) >= 0);
  int fd = shm_open(("/" + dead).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  cr_assert(fd >= 0);
  close(fd);
  size_t removed = tutti::transport::shm::remove_abandoned_segments();
  bool dead_left = access(("/dev/shm/" + dead).c_str(), F_OK) == 0;
  std::vector<bool> present;
  for (const std::string& name : kept) present.push_back(access(("/dev/shm/" + name).c_str(), F_OK) == 0);
  for (const std::string& name : kept) shm_unlink(("/" + name).c_str());
  shm_unlink(("/" + dead).c_str());
  cr_assert(!dead_left, "%s was not removed", dead.c_str());
  cr_assert_geq(removed, 1u);
  for (size_t i = 0; i < kept.size(); ++i) cr_assert(present[i], "%s was removed", kept[i].c_str());
}

Test(shm_group, no_segment_is_left_in_dev_shm, .timeout = 60) {
  {
    Ranks ranks(4);
    cr_assert(leftover_segments().empty(), "%s is left once all ranks mapped it", leftover_segments()[0].c_str());
  }
  cr_assert(leftover_segments().empty());
}

// Rank 0 gives up on a rank that never maps the segment, names it, and removes it.
Test(shm_group, creation_times_out_naming_the_absent_ranks, .timeout = 60) {
  store_test::Store store;
  auto start = store_test::Clock::now();
  Error error = store_test::error_of([&] { Group::create(*store.client, "test/shm/", 0, 3, Deadline::after_ms(300)); });
  cr_assert_eq(error.status(), Status::kTimeout, "%s", error.what());
  cr_assert(contains(error.what(), "ranks 1, 2 did not map shared-memory segment /tutti-"), "%s", error.what());
  cr_assert(ms_since(start) < tt_timeout_ms(3000));
  cr_assert(leftover_segments().empty(), "%s was left behind", leftover_segments()[0].c_str());

  error = store_test::error_of([&] { Group::create(*store.client, "other/shm/", 1, 3, Deadline::after_ms(300)); });
  cr_assert_eq(error.status(), Status::kTimeout, "%s", error.what());
  cr_assert(contains(error.what(), "rank 0 did not publish"), "%s", error.what());
}

namespace {

// For the tests of memory from allocate_shared: the size from which collectives read
// it in place (group_memory.cc), the bytes left between buffers, so that they start off
// alignment, and the value of the bytes no collective may write.
constexpr size_t kInPlaceFromBytes = size_t{64} << 10, kGap = 61;
constexpr unsigned char kFree = 0xA5;

// allocate_shared on every rank at once (it is collective): each rank's part.
std::vector<unsigned char*> allocate_everywhere(Ranks& ranks, size_t bytes) {
  std::vector<unsigned char*> parts(ranks.size);
  ranks.run([&](int rank, Failures&) {
    parts[rank] = static_cast<unsigned char*>(
        ranks.groups[rank]->allocate_shared(*ranks.clients[rank], "test/shm/memory/", bytes, soon()));
  });
  return parts;
}

}  // namespace

// Buffers from allocate_shared, which broadcast and all_gather read in place from
// 64 KiB on (in_place_runs counts each such call): sizes below, at and above that, at odd offsets, every byte of the
// region outside the buffers checked; a broadcast root, or one rank's all_gather block, in private memory sends the
// call through the slots (an all_gather's only where its result is private too); the parts start as zeros; freed
// regions leave the group mapping what it did before, and nothing in /dev/shm.
Test(shm_group, shared_memory_is_read_in_place, .timeout = 120) {
  constexpr size_t kSizes[] = {1000, (size_t{64} << 10) - 1, size_t{64} << 10, 1000003};
  constexpr size_t kLargest = 1000003;
  for (int size : {1, 2, 3, 5}) {
    Ranks ranks(size);
    const size_t before = ranks.groups[0]->mapped_bytes();
    const size_t region_bytes = kGap + kLargest + kGap + kLargest * size + kGap;
    std::vector<unsigned char*> parts = allocate_everywhere(ranks, region_bytes);
    cr_assert_geq(ranks.groups[0]->mapped_bytes(), before + region_bytes * size);
    const std::vector<unsigned char> zeros(region_bytes, 0);
    for (int r = 0; r < size; ++r)
      cr_assert(std::memcmp(parts[r], zeros.data(), region_bytes) == 0, "part %d is not zeros", r);
    cr_assert(leftover_segments().empty(), "%s is left once all ranks mapped it", leftover_segments()[0].c_str());
    ranks.run([&](int rank, Failures& failures) {
      Group& group = *ranks.groups[rank];
      unsigned char* region = parts[rank];
      std::memset(region, kFree, region_bytes);
      unsigned char* send = region + kGap;
      unsigned char* recv = send + kLargest + kGap;
      // Every byte of the region but [send, send + bytes) and [recv, recv + recv_bytes) is untouched.
      auto untouched_around = [&](size_t bytes, size_t recv_bytes) {
        for (size_t i = 0; i < region_bytes; ++i) {
          const unsigned char* at = region + i;
          bool used = (at >= send && at < send + bytes) || (at >= recv && at < recv + recv_bytes);
          if (!used && *at != kFree) return false;
        }
        return true;
      };
      auto expect_blocks = [&](const std::string& name, const unsigned char* out, size_t bytes, int blocks) {
        for (int r = 0; r < blocks; ++r) {
          for (size_t i = 0; i < bytes; ++i) {
            if (out[r * bytes + i] != pattern(r, i)) {
              failures.expect(rank, false, tutti::concat(name, ": byte ", i, " of rank ", r, "'s block differs"));
              return;
            }
          }
        }
      };
      for (size_t bytes : kSizes) {
        for (int root : {0, size - 1}) {
          for (bool private_root : {false, true}) {
            Guarded elsewhere(bytes);
            unsigned char* buffer = rank == root && private_root ? elsewhere.get() : send;
            for (size_t i = 0; i < bytes; ++i) buffer[i] = rank == root ? pattern(root, i) : 0;
            const uint64_t runs = group.in_place_runs();
            group.broadcast(buffer, bytes, root, ranks.context(rank, "broadcast"));
            std::string name = tutti::concat("broadcast of ", bytes, " bytes from ", root,
                                             private_root ? " in private memory" : " in shared memory");
            failures.expect(rank, group.in_place_runs() - runs == (bytes >= kInPlaceFromBytes && !private_root),
                            name + ": in place or not, wrongly");
            for (size_t i = 0; i < bytes; ++i) {
              if (buffer[i] != pattern(root, i)) {
                failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
                break;
              }
            }
            failures.expect(rank, untouched_around(bytes, 0) && elsewhere.intact(), name + ": wrote outside");
            std::memset(send, kFree, bytes);
          }
        }
        // Every result in shared memory: each rank copies its block into all of them;
        // else, every block there: each copies all blocks into its result.
        for (const Form& form : kForms) {
          const bool in_place = form.in_place;
          const bool private_block = form.private_source && rank == 1;
          const bool private_result = form.private_result && rank == 1;
          const bool slots = form.private_source && form.private_result && size > 1;
          Guarded block_elsewhere(bytes), result_elsewhere(bytes * size);
          unsigned char* result = private_result ? result_elsewhere.get() : recv;
          unsigned char* mine = in_place ? result + rank * bytes : private_block ? block_elsewhere.get() : send;
          for (size_t i = 0; i < bytes; ++i) mine[i] = pattern(rank, i);
          const uint64_t runs = group.in_place_runs();
          group.all_gather(mine, result, bytes, ranks.context(rank, "all_gather"));
          std::string name = tutti::concat("all_gather of ", bytes, " bytes ", form.name);
          failures.expect(rank, group.in_place_runs() - runs == (bytes >= kInPlaceFromBytes && !slots),
                          name + ": in place or not, wrongly");
          expect_blocks(name, result, bytes, size);
          failures.expect(rank,
                          untouched_around(in_place || private_block ? 0 : bytes, private_result ? 0 : bytes * size) &&
                              block_elsewhere.intact() && result_elsewhere.intact(),
                          name + ": wrote outside");
          std::memset(region, kFree, region_bytes);
        }
      }
    });
    ranks.run([&](int rank, Failures& failures) {
      Group& group = *ranks.groups[rank];
      failures.expect(rank, group.free_shared(parts[rank]), "free_shared refused what allocate_shared returned");
      failures.expect(rank, !group.free_shared(parts[rank]), "free_shared freed a region twice");
      failures.expect(rank, group.mapped_bytes() == before, "the freed region is still counted");
      // Through the slots again, with no region to ask about.
      Guarded send(size_t{1} << 20), recv((size_t{1} << 20) * size);
      for (size_t i = 0; i < send.bytes(); ++i) send.get()[i] = pattern(rank, i);
      group.all_gather(send.get(), recv.get(), send.bytes(), ranks.context(rank, "all_gather"));
      for (int r = 0; r < size; ++r) {
        if (recv.get()[r * send.bytes() + 5] != pattern(r, 5)) failures.expect(rank, false, "all_gather after free");
      }
    });
  }
  cr_assert(leftover_segments().empty(), "%s was left behind", leftover_segments()[0].c_str());
}

// gather, scatter and all_to_all with buffers from allocate_shared, which they read (a
// gather into a root's result there: write) in place from 64 KiB of block on
// (in_place_runs counts each such call): blocks below, at and above that, at 1, 2, 3
// and 5 ranks, every byte of the region outside the buffers checked; rank 1's send
// buffer (a scatter's root's) in private memory sends the call through the slots
// (a gather's only where root's result is private too), with the same results.
Test(shm_group, shared_memory_gather_scatter_and_all_to_all_read_in_place, .timeout = 120) {
  constexpr size_t kSizes[] = {1000, (size_t{64} << 10) - 1, size_t{64} << 10, 300007};
  constexpr size_t kLargest = 300007;
  for (int size : {1, 2, 3, 5}) {
    Ranks ranks(size);
    const size_t region_bytes = kGap + kLargest * size + kGap + kLargest * size + kGap;
    const std::vector<unsigned char> untouched(region_bytes, kFree);
    std::vector<unsigned char*> parts = allocate_everywhere(ranks, region_bytes);
    ranks.run([&](int rank, Failures& failures) {
      Group& group = *ranks.groups[rank];
      unsigned char* region = parts[rank];
      std::memset(region, kFree, region_bytes);
      unsigned char* const send = region + kGap;
      unsigned char* const recv = send + kLargest * size + kGap;
      // After a call: whether it ran in place, and that nothing of the region changed but
      // [send, send + send_bytes) and [recv, recv + recv_bytes).
      auto check_rest = [&](const std::string& name, uint64_t runs_before, bool in_place, size_t send_bytes,
                            size_t recv_bytes) {
        failures.expect(rank, group.in_place_runs() - runs_before == (in_place ? 1u : 0u),
                        name + (in_place ? ": did not run in place" : ": ran in place"));
        const size_t recv_from = recv - region;
        const bool intact =
            std::memcmp(region, untouched.data(), kGap) == 0 &&
            std::memcmp(send + send_bytes, untouched.data(), recv_from - kGap - send_bytes) == 0 &&
            std::memcmp(recv + recv_bytes, untouched.data(), region_bytes - recv_from - recv_bytes) == 0;
        failures.expect(rank, intact, name + ": wrote outside its buffers");
        std::memset(region, kFree, region_bytes);
      };
      auto expect_bytes = [&](const std::string& name, const unsigned char* got, size_t bytes, int from) {
        for (size_t i = 0; i < bytes; ++i) {
          if (got[i] != pattern(from, i)) {
            failures.expect(rank, false, tutti::concat(name, ": byte ", i, " differs"));
            return;
          }
        }
      };
      for (size_t bytes : kSizes) {
        const bool large = bytes >= kInPlaceFromBytes;
        for (bool private_one : {false, true}) {
          const char* form = private_one ? " (one send buffer private)" : "";
          Guarded elsewhere(bytes * size);
          const bool mine_private = private_one && rank == 1;
          unsigned char* mine = mine_private ? elsewhere.get() : send;

          int root = size - 1;
          for (bool private_result : {false, true}) {
            // Root's result in shared memory: every rank copies its block into it; else
            // root copies every block out, when all lie in shared memory.
            Guarded result_elsewhere(bytes * size);
            unsigned char* result = rank != root ? nullptr : private_result ? result_elsewhere.get() : recv;
            for (size_t i = 0; i < bytes; ++i) mine[i] = pattern(rank, i);
            std::string name = tutti::concat("gather of ", bytes, " bytes to ", root, form,
                                             private_result ? " (root's result private)" : "");
            uint64_t runs = group.in_place_runs();
            group.gather(mine, result, bytes, root, ranks.context(rank, "gather"));
            for (int r = 0; rank == root && r < size; ++r) {
              expect_bytes(tutti::concat(name, ", block ", r), result + r * bytes, bytes, r);
            }
            check_rest(name, runs, large && (!private_result || !(private_one && size > 1)), mine_private ? 0 : bytes,
                       rank == root && !private_result ? bytes * size : 0);
            failures.expect(rank, result_elsewhere.intact(), name + ": wrote outside the private result");
          }

          root = 0;
          const bool root_private = private_one && rank == root;
          unsigned char* all = root_private ? elsewhere.get() : send;
          for (int r = 0; rank == root && r < size; ++r) {
            for (size_t i = 0; i < bytes; ++i) all[r * bytes + i] = pattern(r, i);
          }
          std::string name =
              tutti::concat("scatter of ", bytes, " bytes from ", root, private_one ? " (root's private)" : "");
          uint64_t runs = group.in_place_runs();
          group.scatter(rank == root ? all : nullptr, recv, bytes, root, ranks.context(rank, "scatter"));
          expect_bytes(name, recv, bytes, rank);
          check_rest(name, runs, large && !private_one, rank == root && !root_private ? bytes * size : 0, bytes);

          // Rank q's block for rank r carries pattern q * 8 + r.
          for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < bytes; ++i) mine[r * bytes + i] = pattern(rank * 8 + r, i);
          }
          name = tutti::concat("all_to_all of ", bytes, " bytes a block", form);
          runs = group.in_place_runs();
          group.all_to_all(mine, recv, bytes, ranks.context(rank, "all_to_all"));
          for (int r = 0; r < size; ++r)
            expect_bytes(tutti::concat(name, ", block ", r), recv + r * bytes, bytes, r * 8 + rank);
          check_rest(name, runs, large && !(private_one && size > 1), mine_private ? 0 : bytes * size, bytes * size);
          failures.expect(rank, elsewhere.intact(), name + ": wrote outside the private buffer");
        }
      }
    });
    ranks.run([&](int rank, Failures& failures) {
      failures.expect(rank, ranks.groups[rank]->free_shared(parts[rank]), "free_shared refused the region");
    });
  }
  cr_assert(leftover_segments().empty(), "%s was left behind", leftover_segments()[0].c_str());
}

// all_reduce, reduce and reduce_scatter with their buffers from allocate_shared: from
// 64 KiB on, each rank reduces its slice straight from every rank's vector into the
// results (in_place_runs counts each such call), out of place and in place, off cache
// line alignment, below and above the 16 MiB from which results stream, at 1, 2, 3 and
// 5 ranks, int32 SUM and float16 AVG, with every byte of the region outside the
// buffers checked; one rank's vector or result in private memory sends the call
// through the slots, with the same results.
Test(shm_group, shared_memory_reductions_read_in_place, .timeout = 180) {
  constexpr size_t kCountsHere[] = {1000, 32768, 32768 + 5, (size_t{1} << 22) + 13};
  constexpr size_t kLargestBytes = ((size_t{1} << 22) + 13) * 4 + 5 * 64;
  constexpr size_t kRegionBytes = kGap + kLargestBytes + kGap + kLargestBytes + kGap;
  const std::pair<Dtype, ReduceOp> kCases[] = {{Dtype::kInt32, ReduceOp::kSum}, {Dtype::kFloat16, ReduceOp::kAvg}};
  const std::vector<unsigned char> untouched(kRegionBytes, kFree);
  for (int size : {1, 2, 3, 5}) {
    Ranks ranks(size);
    std::vector<unsigned char*> parts = allocate_everywhere(ranks, kRegionBytes);
    ranks.run([&](int rank, Failures& failures) {
      Group& group = *ranks.groups[rank];
      unsigned char* region = parts[rank];
      std::memset(region, kFree, kRegionBytes);
      unsigned char* const shared_send = region + kGap;
      unsigned char* const shared_recv = shared_send + kLargestBytes + kGap;
      // Runs one call and checks it: whether it ran in place; its result (count
      // elements from element `first` of every rank's vector) where this rank has one;
      // and that nothing in the region but [used, used + used_bytes) and the result
      // changed.
      auto check = [&](const std::string& name, auto&& call, bool in_place, const unsigned char* result, size_t count,
                       size_t first, Dtype dtype, ReduceOp op, const unsigned char* used, size_t used_bytes) {
        const uint64_t runs = group.in_place_runs();
        call();
        failures.expect(rank, group.in_place_runs() - runs == (in_place ? 1u : 0u),
                        name + (in_place ? ": did not run in place" : ": ran in place"));
        for (size_t i = 0; result != nullptr && i < count; ++i) {
          double got = get(result, i, dtype), want = expected(dtype, op, size, first + i);
          if (!close_enough(got, want, dtype)) {
            failures.expect(rank, false, tutti::concat(name, ": element ", i, " is ", got, ", want ", want));
            break;
          }
        }
        const size_t result_bytes = count * tutti::dtype_size(dtype);
        std::vector<std::pair<size_t, size_t>> spans;  // [from, to) of the region that may change
        for (auto [at, bytes] : {std::pair{used, used_bytes}, std::pair{result, result_bytes}}) {
          if (at >= region && at < region + kRegionBytes) spans.emplace_back(at - region, at - region + bytes);
        }
        std::sort(spans.begin(), spans.end());
        size_t from = 0;
        spans.emplace_back(kRegionBytes, kRegionBytes);
        for (auto [lo, hi] : spans) {
          if (lo > from && std::memcmp(region + from, untouched.data(), lo - from) != 0) {
            failures.expect(rank, false, tutti::concat(name, ": wrote bytes [", from, ", ", lo, ") of the region"));
          }
          from = std::max(from, hi);
        }
        std::memset(region, kFree, kRegionBytes);
      };
      for (auto [dtype, op] : kCases) {
        const size_t unit = tutti::dtype_size(dtype);
        auto fill = [&](unsigned char* vector, size_t n) {
          for (size_t i = 0; i < n; ++i) put(vector, i, dtype, value_of(rank, i));
        };
        for (size_t count : kCountsHere) {
          const size_t bytes = count * unit;
          const bool large = bytes >= kInPlaceFromBytes;
          for (const Form& form : kForms) {
            const bool in_place = form.in_place;
            const bool private_vector = form.private_source && rank == 1;
            const bool private_result = form.private_result && rank == 1;
            Guarded vector_elsewhere(bytes), elsewhere(bytes);
            unsigned char* send = private_vector ? vector_elsewhere.get() : shared_send;
            unsigned char* recv = private_result ? elsewhere.get() : in_place ? send : shared_recv;
            fill(send, count);
            std::string name = tutti::concat(case_name("all_reduce", count, dtype, op, false), " (", form.name, ")");
            check(
                name, [&] { group.all_reduce(send, recv, count, dtype, op, ranks.context(rank, "all_reduce")); },
                large && (size == 1 || !(form.private_source || form.private_result)), recv, count, 0, dtype, op, send,
                bytes);
            failures.expect(rank, elsewhere.intact() && vector_elsewhere.intact(),
                            name + ": wrote outside the private buffers");
          }
          for (int root : {0, size - 1}) {
            for (const char* form : {"out of place", "in place on root", "root's result in private memory"}) {
              const bool receives = rank == root, private_result = form[0] == 'r' && receives;
              Guarded elsewhere(bytes);
              unsigned char* recv = !receives        ? nullptr
                                    : private_result ? elsewhere.get()
                                    : form[0] == 'i' ? shared_send
                                                     : shared_recv;
              fill(shared_send, count);
              std::string name =
                  tutti::concat(case_name("reduce", count, dtype, op, false), " to ", root, " (", form, ")");
              check(
                  name, [&] { group.reduce(shared_send, recv, count, dtype, op, root, ranks.context(rank, "reduce")); },
                  large && form[0] != 'r', recv, count, 0, dtype, op, shared_send, bytes);
              failures.expect(rank, elsewhere.intact(), name + ": wrote outside the private buffer");
            }
          }
          const size_t per_rank = (count + size - 1) / size;
          for (const char* form : {"out of place", "in place", "rank 1's vector in private memory"}) {
            const bool private_vector = form[0] == 'r' && rank == 1;
            Guarded elsewhere(per_rank * unit * size);
            unsigned char* send = private_vector ? elsewhere.get() : shared_send;
            unsigned char* recv = form[0] == 'i' ? send + rank * per_rank * unit : shared_recv;
            fill(send, per_rank * size);
            std::string name =
                tutti::concat(case_name("reduce_scatter", per_rank, dtype, op, false), " per rank (", form, ")");
            check(
                name,
                [&] { group.reduce_scatter(send, recv, per_rank, dtype, op, ranks.context(rank, "reduce_scatter")); },
                per_rank * unit * size >= kInPlaceFromBytes && (size == 1 || form[0] != 'r'), recv, per_rank,
                rank * per_rank, dtype, op, send, per_rank * unit * size);
            failures.expect(rank, elsewhere.intact(), name + ": wrote outside the private buffer");
          }
        }
      }
    });
    ranks.run([&](int rank, Failures& failures) {
      failures.expect(rank, ranks.groups[rank]->free_shared(parts[rank]), "free_shared refused the region");
    });
  }
  cr_assert(leftover_segments().empty(), "%s was left behind", leftover_segments()[0].c_str());
}

// From 16 MiB of result, all_gather in place copies with streaming stores, which
// must handle blocks that start and end off alignment.
Test(shm_group, shared_memory_all_gather_streams_large_results, .timeout = 60) {
  constexpr size_t kBytes = (size_t{8} << 20) + 3;
  Ranks ranks(2);
  std::vector<unsigned char*> parts = allocate_everywhere(ranks, 3 * kBytes + 3);
  ranks.run([&](int rank, Failures& failures) {
    unsigned char* send = parts[rank] + 1;
    unsigned char* recv = send + kBytes + 1;  // after a guard byte
    for (bool in_place : {false, true}) {
      unsigned char* mine = in_place ? recv + rank * kBytes : send;
      for (size_t i = 0; i < kBytes; ++i) mine[i] = pattern(rank, i);
      recv[-1] = recv[2 * kBytes] = 0xA5;
      ranks.groups[rank]->all_gather(mine, recv, kBytes, ranks.context(rank, "all_gather"));
      failures.expect(rank, recv[-1] == 0xA5 && recv[2 * kBytes] == 0xA5, "wrote outside the receive buffer");
      for (int r = 0; r < 2; ++r) {
        for (size_t i = 0; i < kBytes; ++i) {
          if (recv[r * kBytes + i] != pattern(r, i)) {
            failures.expect(rank, false,
                            tutti::concat(in_place ? "in place" : "out of place", ": byte ", i, " of rank ", r,
                                          "'s block differs"));
            break;
          }
        }
      }
    }
  });
}

// A rank that freed a region the root's data lies in cannot read it: it fails with
// kMismatch saying so, and the root, waiting for it to be done, hears of it at once.
Test(shm_group, shared_memory_freed_on_one_rank_is_a_mismatch, .timeout = 60) {
  Ranks ranks(2);
  std::vector<unsigned char*> parts = allocate_everywhere(ranks, 200000);
  ranks.groups[1]->free_shared(parts[1]);
  ranks.run([&](int rank, Failures& failures) {
    Guarded elsewhere(100000);
    unsigned char* buffer = rank == 0 ? parts[0] : elsewhere.get();
    auto start = store_test::Clock::now();
    Error error = store_test::error_of([&] {
      ranks.groups[rank]->broadcast(buffer, 100000, 0, ranks.context(rank, "broadcast", tt_timeout_ms(20000)));
    });
    failures.expect(rank, error.status() == Status::kMismatch, error.what());
    if (rank == 1) failures.expect(rank, contains(error.what(), "tutti_mem_free"), error.what());
    failures.expect(rank, ms_since(start) < tt_timeout_ms(5000),
                    tutti::concat(error.what(), " after ", ms_since(start), " ms"));
    failures.expect(rank, elsewhere.intact(), "wrote outside the buffer");
  });
}

// Ranks that ask for different sizes: the one that differs from rank 0 says so, and
// the others fail with its reason at once, long before their deadline.
Test(shm_group, shared_memory_of_different_sizes_is_refused, .timeout = 60) {
  Ranks ranks(3);
  std::vector<Error> errors(3, Error(Status::kOk, ""));
  auto start = store_test::Clock::now();
  ranks.run([&](int rank, Failures&) {
    errors[rank] = store_test::error_of([&] {
      ranks.groups[rank]->allocate_shared(*ranks.clients[rank], "test/shm/memory/", rank == 1 ? 8192 : 4096,
                                          Deadline::after_ms(60000));
    });
  });
  cr_assert(ms_since(start) < tt_timeout_ms(20000), "the ranks waited %lld ms", (long long)ms_since(start));
  for (int rank = 0; rank < 3; ++rank) {
    cr_assert_eq(errors[rank].status(), Status::kTransport, "rank %d: %s", rank, errors[rank].what());
    cr_assert(contains(errors[rank].what(), "pass the same bytes to tutti_mem_alloc on every rank"), "rank %d: %s",
              rank, errors[rank].what());
  }
  cr_assert(contains(errors[0].what(), "rank 1 reports"), "%s", errors[0].what());
  cr_assert(leftover_segments().empty(), "%s was left behind", leftover_segments()[0].c_str());
}

// A size past the limit, on one rank only or on all, where the page-rounded size times
// the ranks would wrap around: every rank fails at once with kInvalidArgument.
Test(shm_group, shared_memory_past_the_limit_is_refused_on_every_rank, .timeout = 60) {
  Ranks ranks(2);
  const size_t wrapping = SIZE_MAX / 2 + 2;  // rounded to the page and doubled: 8192
  for (bool everywhere : {false, true}) {
    std::vector<Error> errors(2, Error(Status::kOk, ""));
    ranks.run([&](int rank, Failures&) {
      errors[rank] = store_test::error_of([&] {
        ranks.groups[rank]->allocate_shared(*ranks.clients[rank], "test/shm/memory/",
                                            rank == 1 || everywhere ? wrapping : 4096, Deadline::after_ms(60000));
      });
    });
    for (int rank = 0; rank < 2; ++rank) {
      cr_assert_eq(errors[rank].status(), Status::kInvalidArgument, "rank %d: %s", rank, errors[rank].what());
      int asker = everywhere ? rank : 1;
      cr_assert(contains(errors[rank].what(), tutti::concat("rank ", asker, " asked for ", wrapping,
                                                            " bytes, more than tutti_mem_alloc can map")),
                "rank %d: %s", rank, errors[rank].what());
    }
  }
  cr_assert(leftover_segments().empty(), "%s was left behind", leftover_segments()[0].c_str());
  cr_assert_eq(max_shared_part(2), size_t{1} << 45);
  cr_assert(shared_size_error(max_shared_part(3), 3).empty());
  cr_assert(!shared_size_error(max_shared_part(3) + 1, 3).empty());
}

namespace {

// One rank of real_processes_more_ranks_than_cores, in a forked child: rank 0 serves
// the store. Returns the exit status: 0, or the step that failed (10 + call: an
// all_reduce's result, 60 + call: an all_gather's, 80 + call: an all_to_all's, 70:
// fewer than two calls read their peers).
int process_rank(int rank, int size, int port) {
  try {
    auto loop = tutti::loop::Loop::create();
    std::unique_ptr<tutti::store::Server> server;
    if (rank == 0) server = tutti::store::Server::start(loop, "127.0.0.1", static_cast<uint16_t>(port));
    auto client = tutti::store::Client::connect(loop, "127.0.0.1", static_cast<uint16_t>(port), soon());
    auto group = Group::create(*client, "proc/shm/", rank, size, soon());
    Fault fault;
    Scratch scratch;
    OpContext context;
    context.fault = &fault;
    const std::string where = tutti::concat("comm \"proc\" (rank ", rank, " of ", size, ")");
    context.where = where;
    context.scratch = &scratch;
    for (int iteration = 0; iteration < 40; ++iteration) {
      // Every fifth round one rank comes late, so that the others go to sleep.
      if (iteration % 5 == 0 && rank == iteration / 5 % size) usleep(20000);
      size_t count = iteration % 2 == 0 ? 3 : 400000;
      std::vector<float> send(count), recv(count);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(value_of(rank, i + iteration));
      context.name = "all_reduce";
      context.seq = iteration + 1;
      context.deadline = soon();
      group->all_reduce(send.data(), recv.data(), count, Dtype::kFloat32, ReduceOp::kSum, context);
      for (size_t i = 0; i < count; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += value_of(r, i + iteration);
        if (recv[i] != want) return 10 + iteration;
      }
    }
    // Blocks of 40000 bytes, private: rank 0 chooses between the slots and reading the
    // peers' memory, and the first calls of each collective take each form
    // (group_peer_reads.cc).
    constexpr size_t kBlock = 40000;
    std::vector<unsigned char> block(kBlock), all(kBlock * size);
    for (int call = 0; call < 8; ++call) {
      if (call == 4 && rank == size - 1) usleep(20000);
      for (size_t i = 0; i < kBlock; ++i) block[i] = pattern(rank + call, i);
      context.name = "all_gather";
      context.seq = 41 + call;
      context.deadline = soon();
      group->all_gather(block.data(), all.data(), kBlock, context);
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < kBlock; ++i) {
          if (all[r * kBlock + i] != pattern(r + call, i)) return 60 + call;
        }
      }
    }
    // all_to_all the same way: the block for this rank at its offset in every send.
    std::vector<unsigned char> blocks(kBlock * size);
    for (int call = 0; call < 8; ++call) {
      for (int to = 0; to < size; ++to) {
        for (size_t i = 0; i < kBlock; ++i) blocks[to * kBlock + i] = pattern(rank * 5 + to + call, i);
      }
      context.name = "all_to_all";
      context.seq = 49 + call;
      context.deadline = soon();
      group->all_to_all(blocks.data(), all.data(), kBlock, context);
      for (int from = 0; from < size; ++from) {
        for (size_t i = 0; i < kBlock; ++i) {
          if (all[from * kBlock + i] != pattern(from * 5 + rank + call, i)) return 80 + call;
        }
      }
    }
    if (group->peer_read_runs() < 2) return 70;
    context.name = "barrier";
    group->barrier(context);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}

}  // namespace

Test(shm_group, real_processes_more_ranks_than_cores, .timeout = 120) {
  const int size = 4;
  // The all_gathers read their peers even so (group_peer_reads.cc); the waits still
  // find the ranks outnumbering the cores.
  setenv("TUTTI_CPU_PER_RANK", "yes", 1);
  int port = tt_free_port();
  cr_assert_gt(port, 0);
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      _exit(process_rank(rank, size, port));
    }
    cr_assert_gt(pid, 0, "fork failed");
    children.push_back(pid);
  }
  auto start = store_test::Clock::now();
  std::vector<int> statuses(size, -1);
  for (int done = 0; done < size && ms_since(start) < tt_timeout_ms(60000);) {
    for (int r = 0; r < size; ++r) {
      int status;
      if (statuses[r] == -1 && waitpid(children[r], &status, WNOHANG) == children[r]) {
        statuses[r] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        ++done;
      }
    }
    usleep(10000);
  }
  for (int r = 0; r < size; ++r) {
    if (statuses[r] == -1) {
      kill(children[r], SIGKILL);
      waitpid(children[r], nullptr, 0);
    }
  }
  for (int r = 0; r < size; ++r) cr_assert_eq(statuses[r], 0, "rank %d ended with %d", r, statuses[r]);
  cr_assert(leftover_segments().empty());
}
