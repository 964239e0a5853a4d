// A communicator's collectives: its transports (UCX for point-to-point, a
// shared-memory group when all its ranks share a node, a hierarchy when they span
// several nodes alike), its scratch memory, its executor, and the sequence numbers
// that tag its operations. Comm owns one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "runtime/collectives/engine_setup.h"
#include "runtime/collectives/hierarchy.h"
#include "runtime/collectives/selector.h"
#include "runtime/common/fault.h"
#include "runtime/health/activity_board.h"
#include "runtime/operation/call.h"
#include "runtime/operation/scratch.h"
#include "runtime/store/client.h"
#include "runtime/transport/shm/group.h"
#include "runtime/transport/transport.h"
#include "runtime/work/executor.h"

namespace tutti::collectives {

class Engine {
 public:
  // Collective: connects the transports. Throws Error (see tutti_comm_init).
  static std::unique_ptr<Engine> create(const EngineSetup& setup, Deadline deadline);
  // Lets the running operation finish (it is bounded), fails the queued ones.
  ~Engine();

  // Validates and runs call (Comm has checked its fault is not raised): blocking
  // (returns nullptr once it is done; on failure it throws the operation's Error) or
  // asynchronous (returns its Work at once). api is a string literal.
  std::shared_ptr<work::Work> issue(const Call& call, const char* api, bool async);

  // Wakes whatever waits in the transport, after the abort flag was set. Any thread.
  void interrupt();

  // How long operations issued from now on may take; those issued before keep theirs.
  void set_op_timeout(int64_t op_timeout_ms) { op_timeout_ms_.store(op_timeout_ms, std::memory_order_relaxed); }
  int64_t op_timeout_ms() const { return op_timeout_ms_.load(std::memory_order_relaxed); }

  // A collective that NCCL runs on the GPU (runtime/device/nccl) takes the next
  // number, as a host one would, so that both kinds interleave in one order on every
  // rank; it enters the history as started and done once enqueued (the GPU's part is
  // the watchdog's), so that a timeout's report can name the ranks that never got
  // there. Returns its number. User thread.
  uint32_t enter_device_collective(const Call& call);

  // tutti_mem_alloc: memory that every rank of the communicator maps, where the ranks
  // share a node (shm::Group::allocate_shared); elsewhere, or for one rank, memory of
  // this process alone. Collective, in the order of the collectives. Throws Error.
  void* allocate_shared(size_t bytes);
  // tutti_mem_free; false if ptr did not come from allocate_shared.
  bool free_shared(void* ptr);

  // What this communicator holds for collectives, for logs and tutti info.
  std::string memory_report() const;

 private:
  struct InFlight {
    transport::Request* request;
    std::shared_ptr<work::Work> work;
    const char* api;    // "tutti_send", for its label
    Deadline deadline;  // the op timeout, from when it was posted
    int64_t timeout_ms;
    Kind kind;  // kSend or kRecv
    int peer;
    int tag;
    uint64_t number;  // of the communicator's sends and receives
  };
  // What a waiter on a send's or receive's Work drives (work/work.h): this engine, while
  // it lives.
  class WaiterDriver;

  // A collective call as it will run: validated, its algorithm chosen, and the
  // fingerprint its messages carry and its entry in the history worked out.
  struct Plan {
    Call call;
    Algorithm algorithm = Algorithm::kShm;
    uint16_t call_check = 0;
    health::OpFacts facts;
  };

  Engine() = default;
  // The plan of a collective call. A call that repeats one of the last kPlansKept
  // planned (the same collective, buffers, count, dtype, op and root: a training loop's
  // all_reduce, DDP's buckets in turn, a broadcast from each rank in turn) gets its
  // plan again, since the checks and the choice depend on nothing else; they were a
  // quarter of a small call's own time (1 rank, 8 bytes: 71-82 ns a call against
  // 56-60). all_to_allv is planned afresh every time: its counts are arrays that the
  // caller may rewrite in place. Throws what validate() does, or the selector's
  // refusal of an algorithm TUTTI_ALGO forces where it cannot run. User thread.
  const Plan& plan_for(const Call& call, const char* api);
  // The context of the operation that starts now (now_ms, a coarse_now_ms() reading):
  // running_, its per-operation fields set. User thread, or the run lock held.
  OpContext& context_for(const char* name, uint32_t seq, int64_t now_ms);
  // queued: issued asynchronously, so already in the history as queued.
  void run_collective(const Plan& plan, uint32_t seq, bool queued);
  // Runs the plan's algorithm; sets context.call_check for those that exchange messages.
  void dispatch(const Plan& plan, OpContext& context);
  // OpContext::report_wait for collectives: one warn line saying how long the
  // operation has waited, for what, which ranks have not joined it and where they are.
  static void report_wait(void* engine, const OpContext& context, const char* waiting_for);
  // The same for a blocking send or receive, on its peer.
  void report_point_to_point_wait(const OpContext& context, const Call& call, const std::string& label);
  // Rethrows a transport's kPeerLost with the store's account of the loss added.
  void explain_peer_lost(const Error& error);
  transport::Request* post_point_to_point(const Call& call);
  // Completes the Works of finished point-to-point requests; true if any remain. With
  // none in flight, still progresses a transport whose sends may linger, at most once
  // per kLingerProgressNs: the shared-memory waits and the executor's idle turns call
  // it, so that bytes UCX holds back reach their peer while this rank waits elsewhere.
  bool progress_in_flight();
  // Completes entry's Work if its request is done, failed, stopped or timed out, and
  // says whether it did; the caller then releases the request.
  bool settle(InFlight& entry);
  // Keeps a posted isend or irecv in in_flight_ with its Work, completing that at once
  // if it is done as posted; returns whether the executor's thread should move it
  // while nobody waits on it.
  bool track_in_flight(transport::Request* request, const Call& call, const char* api, uint64_t number,
                       work::Work& work);
  // The Work of an isend or irecv: its waiter drives it.
  std::shared_ptr<work::Work> new_point_to_point_work() const;
  // WaiterDriver's drive (work.h's Driver::drive), run inline on the waiter's thread;
  // it ends its turn early once `leave` is set (the engine is going).
  bool drive_point_to_point(const work::Work& work, int64_t timeout_ms, const std::atomic<bool>& leave);
  // After a blocking call: has the executor's thread progress a transport whose sends
  // may linger while this rank waits elsewhere.
  void keep_lingering_sends_moving();
  // Blocks until a blocking send or receive completes; number names it in messages.
  void wait_point_to_point(transport::Request* request, const Call& call, const char* api, uint64_t number);
  // "tutti_send #3 (peer 1, tag 7) on comm ...", built only when a message needs it.
  std::string p2p_label(const char* api, uint64_t number, int peer, int tag) const;
  std::string p2p_label(const InFlight& entry) const {
    return p2p_label(entry.api, entry.number, entry.peer, entry.tag);
  }
  // The message of a send or receive that timed out, e.g. "... timed out after 300 ms:
  // rank 1 did not send it; check ...".
  static std::string p2p_timed_out(const std::string& label, int64_t timeout_ms, Kind kind, int peer);

  EngineSetup setup_;
  // setup_.op_timeout_ms until set_op_timeout; read where an operation starts, which is
  // the executor's thread for asynchronous ones.
  std::atomic<int64_t> op_timeout_ms_{0};
  Selector selector_;
  bool check_fingerprints_ = false;
  int64_t wait_report_ms_ = 0;  // TUTTI_WAIT_REPORT_MS: the first report of a long wait; 0 none
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<transport::shm::Group> shm_;
  Scratch scratch_;
  std::unique_ptr<Hierarchy> hierarchy_;  // uses transport_ and scratch_: declared after them
  uint64_t shared_allocations_ = 0;       // allocate_shared calls, for messages
  // How often progress_in_flight progresses a transport with nothing in flight: a wait
  // in shared memory calls it on every turn, and a TCP progress is a system call.
  static constexpr int64_t kLingerProgressNs = 20'000;
  // The smallest receive that UCX may take by rendezvous, below its thresholds over
  // shared memory and TCP (UCX_RNDV_THRESH set lower moves it too): from here on the
  // sender's completion needs this rank's progress.
  static constexpr size_t kReceiveMovedAloneBytes = 2048;
  // allocate_shared's memory where there is no shared-memory group, page-aligned as the
  // shared kind is: freed with the engine.
  static constexpr std::align_val_t kPrivateAlignment{4096};
  struct FreeAligned {
    void operator()(unsigned char* memory) const { ::operator delete[](memory, kPrivateAlignment); }
  };
  std::vector<std::unique_ptr<unsigned char[], FreeAligned>> private_allocations_;
  // The running operation's context: one operation runs at a time (alone on the user
  // thread, or with the executor's run lock), and the engine's part of it (fault,
  // names, scratch, reports) is set once, at creation, rather than for every call.
  OpContext running_;
  // plan_for's, a ring, newest at newest_plan_; user thread only.
  static constexpr size_t kPlansKept = 8;
  std::array<Plan, kPlansKept> plans_;
  size_t plans_held_ = 0;
  size_t newest_plan_ = 0;
  size_t last_used_plan_ = 0;        // the plan plan_for found or made last
  Plan unkept_plan_;                 // all_to_allv's, which is planned afresh every time
  uint32_t next_seq_ = 1;            // collectives, in issue order; user thread only
  uint64_t next_p2p_ = 1;            // sends and receives, for messages
  std::vector<InFlight> in_flight_;  // run lock held
  std::shared_ptr<WaiterDriver> waiter_driver_;
  // The Work of every isend done as posted (a small message, sent eagerly): already
  // complete and never changed again, it is shared rather than made for each, as Open
  // MPI hands back a completed request (an allocation, a completion under a lock and a
  // destruction a call: a rank's 8-byte exchange with itself, both with works, took
  // 0.49 us, 0.42 without).
  std::shared_ptr<work::Work> sent_at_once_;
  int64_t lingering_progressed_ns_ = 0;       // when progress_in_flight last did; run lock held
  std::unique_ptr<work::Executor> executor_;  // last: stops before the rest goes
};

}  // namespace tutti::collectives
