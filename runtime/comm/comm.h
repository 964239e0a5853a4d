// A communicator: a group of ranks that met at the rendezvous store and know their
// places in it. The world communicator comes from init(); split() makes others.
// One thread at a time may use a Comm, except abort(), which any thread may call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/collectives/engine.h"
#include "runtime/common/fault.h"
#include "runtime/common/settings.h"
#include "runtime/device/device_path.h"
#include "runtime/health/activity_board.h"
#include "runtime/health/monitor.h"
#include "runtime/loop/loop.h"
#include "runtime/operation/call.h"
#include "runtime/rendezvous/init_cancel.h"
#include "runtime/rendezvous/meeting.h"
#include "runtime/rendezvous/plan.h"
#include "runtime/rendezvous/store_access.h"
#include "runtime/store/client.h"

namespace tutti::comm {

struct Options {
  rendezvous::Request request;
  std::string name = "world";
  int64_t init_timeout_ms = settings::kDefaultInitTimeoutMs;
  int64_t op_timeout_ms = settings::kDefaultOpTimeoutMs;
  std::string trace_folder;  // config.trace; TUTTI_TRACE wins, "" without it: no trace
};

class Comm {
 public:
  // Meets the other ranks; throws Error (see tutti_comm_init in tutti.h). cancel, if
  // given, lets another thread give the init up (init_cancel.h): it then throws
  // Error(kAborted).
  static std::unique_ptr<Comm> init(const Options& options, rendezvous::InitCancel* cancel = nullptr);
  // Joins a running job as one of the ranks a grow admits (tutti_comm_join in tutti.h):
  // takes its turn at the store the plan names and waits until a communicator grows to
  // seat it, then meets the grown communicator's ranks. Throws Error.
  static std::unique_ptr<Comm> join(const Options& options);
  // Leaves the meeting; the rank serving the store waits for the others first.
  ~Comm();

  int rank() const { return place_.rank; }
  int size() const { return place_.size; }
  int local_rank() const { return place_.local_rank; }
  int local_size() const { return place_.local_size; }
  int node_rank() const { return place_.node_rank; }
  const std::string& name() const { return name_; }
  // "comm \"world\" (rank 2 of 4)", for messages.
  std::string describe() const;

  // MPI_Comm_split; nullptr for a negative color. Collective; bounded by the op timeout.
  std::unique_ptr<Comm> split(int color, int key);
  // MPIX_Comm_shrink: a communicator of the ranks the store has not declared lost, in
  // the order of their ranks here. Collective over those ranks; works on a
  // communicator that failed or was aborted; bounded by the op timeout.
  std::unique_ptr<Comm> shrink();
  // A communicator of this one's ranks, keeping their numbers, and the next `count`
  // processes that join (join()), ranks size() and up, in the order they came.
  // Collective; the admission and the meeting each bounded by the op timeout.
  std::unique_ptr<Comm> grow(int count);

  // Runs a collective or point-to-point call (see tutti.h): blocking, returning nullptr
  // once it is done or throwing its Error, or asynchronous, returning its Work at once.
  std::shared_ptr<work::Work> issue(const Call& call, const char* api, bool async);

  // tutti_mem_alloc and tutti_mem_free (Engine::allocate_shared); allocate_shared is
  // collective and bounded by the op timeout; free_shared returns false for memory
  // that did not come from it.
  void* allocate_shared(size_t bytes);
  bool free_shared(void* ptr);

  // Device buffers (tutti_comm_set_memory, _set_stream, _set_device): each opens CUDA
  // for the communicator if it was not yet (throws kUnsupported where it cannot).
  void set_memory(device::Memory memory);
  void set_stream(void* stream);
  void set_device(int device);

  // Fails every pending and later operation with kAborted. Any thread, never blocks.
  void abort();

  // How long each operation issued from now on may take; split() and shrink() pass the
  // current value on to the communicators they make.
  void set_op_timeout(int64_t op_timeout_ms);

  // The ranks the store has declared lost so far (killed, crashed, frozen, cut off).
  std::vector<int> lost_ranks() const;

  // Whether it is usable, and its recent operations, one per line (tutti_comm_dump).
  // Any thread.
  std::string dump() const;

 private:
  // split and shrink, each a span of the trace.
  std::unique_ptr<Comm> split_now(int color, int key);
  std::unique_ptr<Comm> shrink_now();
  std::unique_ptr<Comm> grow_now(int count);
  // init, once the plan is made and the trace started.
  static std::unique_ptr<Comm> init_as_planned(const Options& options, const rendezvous::Plan& plan,
                                               rendezvous::InitCancel* cancel);
  // A Comm with the options' timeouts and the plan's store reached (served here where
  // the plan says), for init and join to name and meet; api starts a failure's message.
  static std::unique_ptr<Comm> reach_store(const Options& options, const rendezvous::Plan& plan, Deadline deadline,
                                           rendezvous::InitCancel* cancel, const char* api);
  Comm() = default;
  // Throws the fault, if one was raised. The test is inline and the message cold: this
  // runs on every call, where a stack frame for the message's strings costs more than
  // the test.
  void check_usable(const char* api) const {
    if (fault_.raised()) [[unlikely]]
      fail_unusable(api);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_unusable(const char* api) const;
  // Rank 0 of the split reads every rank's (color, key) and tells each its new place.
  void publish_split(const std::string& prefix, Deadline deadline);
  // The communicator that split and shrink make: rank new_rank of new_size, meeting
  // under prefix through store (a connection of its own); how and api for messages.
  std::unique_ptr<Comm> make_member(std::unique_ptr<store::Client> store, const std::string& prefix,
                                    const std::string& name, const std::string& how, int new_rank, int new_size,
                                    Deadline deadline, const char* api);
  // The leader of a shrink's attempt: waits until every rank has either arrived or been
  // declared lost, then tells each rank its seat in the new communicator.
  void publish_survivors(store::Client& store, const std::string& prefix, int attempt, Deadline deadline);
  // A rank whose communicator is unusable as its grow begins: tells the grow so, so
  // that it fails on every rank at once (grow.cc).
  void withdraw_from_grow(const std::string& prefix, const Error& error);
  // Rank 0 of a grow: waits until every rank has asked for the same count, admits that
  // many joiners and publishes the verdict (what every rank and joiner then waits for),
  // a failure's included.
  void lead_grow(store::Client& store, const std::string& prefix, int count, const std::string& grown_name,
                 Deadline deadline);
  // Meets the other ranks of plan under prefix_ on store_, then starts the collectives;
  // api for messages.
  void meet_and_start(const rendezvous::Plan& plan, Deadline deadline, const char* api);
  // After the meeting: connects the transports the collectives use, then starts the
  // failure detector.
  void start_collectives(Deadline deadline);
  // issue() where a device path is open: device buffers go to it, host ones to the engine.
  [[gnu::noinline]] std::shared_ptr<work::Work> issue_with_device_path(const Call& call, const char* api, bool async);
  device::DeviceSetup device_setup();
  // The device path, opened (CUDA loaded) if it was not yet; api for messages.
  device::DevicePath& device_path(const char* api);
  // The failure detector's report of a lost peer or store (on the loop thread).
  void lose(Status status, const std::string& why);

  std::shared_ptr<loop::Loop> loop_;
  std::shared_ptr<rendezvous::HostedStore> hosted_;  // set on the process serving the store or a node relay
  bool waits_for_all_on_leave_ = false;              // the world comm of the process serving the store
  std::unique_ptr<store::Client> store_;
  std::string store_host_;
  std::string store_owner_;  // "rank 0" or "tutti launch", for messages
  uint16_t store_port_ = 0;
  std::string store_secret_;  // TUTTI_SECRET, for the connections splits open
  std::string prefix_;        // this comm's keys in the store
  std::string node_key_;      // what tells this rank's node apart, for sub-communicators
  std::string init_method_;
  rendezvous::Place place_;
  std::string name_;
  int64_t init_timeout_ms_ = 0;
  int64_t op_timeout_ms_ = 0;
  uint64_t splits_ = 0;
  uint64_t shrinks_ = 0;
  uint64_t grows_ = 0;
  bool joined_ = false;  // the meeting completed, so there is something to leave
  Fault fault_;          // abort, or a lost peer or store: the communicator is unusable
  std::unique_ptr<health::ActivityBoard> board_;
  std::unique_ptr<collectives::Engine> engine_;
  // Where CUDA is in use in the process, or was asked for: device buffers. It stages
  // through the engine, so it goes first.
  std::unique_ptr<device::DevicePath> device_;
  std::unique_ptr<health::Monitor> monitor_;  // last: it calls into the engine
};

}  // namespace tutti::comm
