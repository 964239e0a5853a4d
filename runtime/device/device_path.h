// A communicator's way to device buffers: which calls carry CUDA pointers, and how
// they run (NCCL, or the staging path through pinned host memory). Comm holds one
// only where CUDA is in use, so a host call pays one null-pointer test for all this.
// The implementation lives in runtime/device/nccl (the only code that sees CUDA
// and NCCL headers, both loaded at run time); a build without them has one that
// says so.
#pragma once

#include <memory>
#include <string>

#include "runtime/collectives/engine.h"
#include "runtime/common/fault.h"
#include "runtime/device/memory.h"
#include "runtime/health/activity_board.h"
#include "runtime/loop/loop.h"
#include "runtime/operation/call.h"
#include "runtime/store/client.h"
#include "runtime/work/work.h"

namespace tutti::device {

struct DeviceSetup {
  std::shared_ptr<loop::Loop> loop;
  store::Client* store = nullptr;
  std::string prefix;  // the communicator's keys in the store
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // picks the default device: local_rank % devices
  std::string where;   // Comm::describe(), for messages
  const Fault* fault = nullptr;
  health::ActivityBoard* board = nullptr;
  collectives::Engine* engine = nullptr;  // host collectives, sequence numbers, the op timeout
};

class DevicePath {
 public:
  // What a parent's NCCL communicator hands its split: the child's NCCL communicator.
  struct Inherited;

  virtual ~DevicePath() = default;

  // Whether call's buffers are device memory. Throws kInvalidArgument when one is host
  // and another device memory.
  virtual bool is_device(const Call& call, const char* api) = 0;
  // Runs a call on device buffers (see tutti.h): asynchronous on the communicator's
  // stream, completing on a CUDA event; blocking waits for it.
  virtual std::shared_ptr<work::Work> issue(const Call& call, const char* api, bool async) = 0;

  virtual void set_memory(Memory memory) = 0;
  // nullptr: the communicator's own stream.
  virtual void set_stream(void* stream) = 0;
  // Throws kInvalidArgument for a device that does not exist, kUnsupported once the
  // device is in use (the NCCL communicator or the stream were made on another).
  virtual void set_device(int device) = 0;

  // Comm::split's part: where this communicator has an NCCL communicator, every rank
  // splits it (ncclCommSplit; color < 0 joins none and gets nullptr). Collective.
  virtual std::shared_ptr<Inherited> split(int color, int key, Deadline deadline) = 0;
};

// Opens CUDA for a communicator. When load is false, returns nullptr unless CUDA is
// already initialised in the process (the driver, libcuda.so.1, is loaded): the check
// tutti_comm_init makes. When load is true (tutti_comm_set_stream and the like) it
// loads the CUDA runtime, and throws kUnsupported saying why where it cannot.
// inherited: from the parent's split, or nullptr.
std::unique_ptr<DevicePath> open_device_path(const DeviceSetup& setup, bool load,
                                             std::shared_ptr<DevicePath::Inherited> inherited);

}  // namespace tutti::device
