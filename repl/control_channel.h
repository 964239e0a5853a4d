// The REPL's own traffic between ranks: rank 0 hands every rank the next chunk, and
// collects what each rank's run of it printed. It runs on a communicator of its own
// that user code never sees, so that a collective the user left half-done cannot
// desynchronise it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tutti.h"

namespace tutti::repl {

// A control operation failed (a rank was lost, most likely): the REPL cannot go on.
class ControlError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What one rank's run of a chunk leaves for the others.
struct Report {
  std::string output;                 // what it printed, then its results, then its error
  std::vector<std::string> pictures;  // what t:show() drew, in order
  bool comm_failed = false;           // the user's communicator failed here, or was aborted
  bool world_ended = false;           // the statement failed here, and this rank ended its world
};

class ControlChannel {
 public:
  explicit ControlChannel(tutti_comm* control);

  // Rank 0 passes the next chunk, or nullopt to end the session; the other ranks pass
  // nullopt and get rank 0's. Blocks the other ranks until rank 0 has a chunk.
  std::optional<std::string> share_chunk(const std::optional<std::string>& chunk);

  struct Gathered {
    // Rank 0: every rank's output and pictures, in rank order; elsewhere empty.
    std::vector<std::string> outputs;
    std::vector<std::vector<std::string>> pictures;
    std::vector<int> comm_failed;  // every rank: the ranks whose report says so
    std::vector<int> world_ended;  // every rank: the ranks that ended their world
  };
  // Every rank passes its report.
  Gathered gather(const Report& mine);

 private:
  void check(tutti_status status, const char* what);

  tutti_comm* control_;
  int32_t rank_ = 0;
  int32_t size_ = 1;
};

}  // namespace tutti::repl
