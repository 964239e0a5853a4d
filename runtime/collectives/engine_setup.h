// What a communicator tells its collectives about itself: its store, its ranks and
// their layout over nodes, its fault flag. The engine (engine.h) and the hierarchy
// (hierarchy.h) both read it.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/common/fault.h"
#include "runtime/health/activity_board.h"
#include "runtime/store/client.h"

namespace tutti::collectives {

struct EngineSetup {
  store::Client* store = nullptr;
  std::string prefix;  // the communicator's keys in the store
  int rank = 0;
  int size = 1;
  bool one_node = false;  // every rank on this node: collectives go through shared memory
  int local_rank = 0;     // this rank's place on its node, for hierarchical collectives
  int local_size = 1;
  int node_rank = 0;
  std::string where;                       // Comm::describe(), for messages
  int64_t op_timeout_ms = 0;               // until Engine::set_op_timeout
  const Fault* fault = nullptr;            // the communicator's: abort, a lost peer
  health::ActivityBoard* board = nullptr;  // the communicator's; what this rank is doing
  int trace_track = 0;                     // the communicator's in the trace (trace/trace.h)
};

}  // namespace tutti::collectives
