// The last operations a communicator ran on this rank (name, sequence number, dtype,
// count, root, reduction, state, times), for tutti_comm_dump, the dump signal and the
// log line of a timeout. A fixed ring indexed by sequence number, so it costs the
// same after a billion operations, and lock-free: the running thread pays a handful
// of plain stores per operation, and a reader retries a slot that changed under it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace tutti::health {

// What an operation is, as the user called it. Strings are static.
struct OpFacts {
  const char* name = "";   // "all_reduce"
  const char* dtype = "";  // "float32"; "" when the operation has none
  const char* op = "";     // "sum"; "" when it reduces nothing
  uint64_t count = 0;
  int root = -1;  // -1 when it has none
};

struct OpRecord {
  enum class State : uint8_t { kQueued, kRunning, kDone, kFailed };
  uint32_t seq = 0;
  OpFacts facts;
  State state = State::kQueued;
  Status status = Status::kOk;
  int64_t issued_ms = 0;    // coarse_now_ms() (deadline.h)
  int64_t started_ms = 0;   // 0 until it starts
  int64_t finished_ms = 0;  // 0 until it ends
};

class OpHistory {
 public:
  static constexpr size_t kCapacity = 64;

  // Each by the thread that issues or runs operation seq, in that order; now_ms from
  // coarse_now_ms(), which the caller has read anyway. A blocking operation starts as
  // it is issued: one write, with running set.
  void issued(uint32_t seq, const OpFacts& facts, int64_t now_ms, bool running);
  void started(uint32_t seq, int64_t now_ms);
  void finished(uint32_t seq, Status status, int64_t now_ms);

  // The records still held, oldest first. Any thread.
  std::vector<OpRecord> recent() const;
  // One line per record, e.g. "  #42 all_reduce float32 x 1024 sum: running for 3.2 s".
  std::string format() const;

 private:
  struct Slot {
    std::atomic<uint32_t> version{0};  // odd while a writer is in it
    std::atomic<uint32_t> seq{0};      // 0: empty
    std::atomic<const char*> name{""};
    std::atomic<const char*> dtype{""};
    std::atomic<const char*> op{""};
    std::atomic<uint64_t> count{0};
    std::atomic<int32_t> root{-1};
    std::atomic<uint8_t> state{0};
    std::atomic<int32_t> status{0};
    std::atomic<int64_t> issued_ms{0};
    std::atomic<int64_t> started_ms{0};
    std::atomic<int64_t> finished_ms{0};
  };

  template <typename Write>
  void write(uint32_t seq, Write&& write_fields);
  bool read(const Slot& slot, OpRecord* record) const;

  Slot slots_[kCapacity];
};

}  // namespace tutti::health
