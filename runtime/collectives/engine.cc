#include "runtime/collectives/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <string_view>
#include <thread>

#include "runtime/collectives/algorithms.h"
#include "runtime/collectives/fingerprint.h"
#include "runtime/collectives/op_trace.h"
#include "runtime/collectives/run_flat.h"
#include "runtime/collectives/transport_wait.h"
#include "runtime/common/concat.h"
#include "runtime/common/cpu_share.h"
#include "runtime/common/deadline.h"
#include "runtime/common/duration_text.h"
#include "runtime/common/error.h"
#include "runtime/common/log.h"
#include "runtime/common/settings.h"
#include "runtime/trace/trace.h"
#include "runtime/transport/ucx/connect.h"

namespace tutti::collectives {
namespace {

// How long a transport's report of a lost peer waits for the store's.
constexpr int64_t kExplainLossMs = 1000;
// How long the report of a long wait may take to read the other ranks' activity.
constexpr int64_t kReportStoreMs = 1000;

// What the operation history keeps of a collective call.
// Where an algorithm's messages go, for the trace: static strings, which the trace
// may write after the engine is gone.
const char* transport_name(Algorithm algorithm) {
  if (algorithm == Algorithm::kShm) return "shm";
  if (algorithm == Algorithm::kHierarchical) return "shm+ucx";
  return "ucx";
}

health::OpFacts facts_of(const Call& call) {
  health::OpFacts facts;
  facts.name = kind_name(call.kind);
  if (call.kind != Kind::kBarrier) {
    facts.dtype = dtype_name(static_cast<Dtype>(call.dtype));
    facts.count = call.count;
  }
  if (is_reducing(call.kind)) facts.op = reduce_op_name(static_cast<ReduceOp>(call.op));
  if (has_root(call.kind)) facts.root = call.root;
  return facts;
}

// An asynchronous all_to_allv runs after its call has returned, when the caller's
// count and offset arrays may be gone: call is pointed at copies, which the returned
// vector holds. Null for every other collective.
std::shared_ptr<const std::vector<size_t>> keep_per_peer(Call& call, int size) {
  if (call.kind != Kind::kAllToAllV) return nullptr;
  const auto n = static_cast<size_t>(size);
  auto kept = std::make_shared<std::vector<size_t>>(4 * n);
  PerPeer& blocks = call.per_peer;
  const size_t* arrays[4] = {blocks.send_counts, blocks.send_offsets, blocks.recv_counts, blocks.recv_offsets};
  for (size_t i = 0; i < 4; ++i) std::copy(arrays[i], arrays[i] + n, kept->data() + i * n);
  blocks = PerPeer{kept->data(), kept->data() + n, kept->data() + 2 * n, kept->data() + 3 * n};
  return kept;
}

}  // namespace

class Engine::WaiterDriver final : public work::Driver {
 public:
  explicit WaiterDriver(Engine* engine) : engine_(engine) {}
  bool drive(const work::Work& work, int64_t timeout_ms) override {
    // Another waiter's turn moves this Work too: wait for its completion instead
    // (tutti_work_test never blocks).
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    return lock.owns_lock() && engine_ != nullptr && engine_->drive_point_to_point(work, timeout_ms, leaving_);
  }
  // Ends a turn under way (within a step of its wait: a millisecond at most), and
  // refuses every later one.
  void detach() {
    leaving_.store(true, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    engine_ = nullptr;
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> leaving_{false};
  Engine* engine_;  // guarded by mutex_; null once the engine is going
};

std::unique_ptr<Engine> Engine::create(const EngineSetup& setup, Deadline deadline) {
  std::unique_ptr<Engine> engine(new Engine());
  engine->setup_ = setup;
  OpContext& running = engine->running_;
  running.fault = setup.fault;
  running.where = engine->setup_.where;
  running.scratch = &engine->scratch_;
  running.engine = engine.get();
  running.report_wait = &Engine::report_wait;
  engine->op_timeout_ms_.store(setup.op_timeout_ms, std::memory_order_relaxed);
  engine->selector_ = Selector::from_environment();
  // Read on every rank, whatever its layout, so that a bad TUTTI_CPU_PER_RANK fails
  // here alike, as a bad TUTTI_ALGO does.
  const CpuShare cpus = this_process_cpu_share();
  engine->check_fingerprints_ = settings::integer("TUTTI_CHECK", 0, 1).value_or(0) == 1;
  engine->wait_report_ms_ =
      settings::integer("TUTTI_WAIT_REPORT_MS", 0, 24 * 3600 * 1000).value_or(settings::kDefaultWaitReportMs);
  engine->transport_ =
      transport::ucx::connect(*setup.store, concat(setup.prefix, "ucx/"), setup.rank, setup.size, setup.where);
  if (setup.one_node && setup.size > 1) {
    engine->shm_ =
        transport::shm::Group::create(*setup.store, concat(setup.prefix, "shm/"), setup.rank, setup.size, deadline);
  }
  if (Hierarchy::may_apply(setup)) {
    engine->hierarchy_ = Hierarchy::create(*engine->transport_, setup, cpus, &engine->scratch_, deadline);
  }
  Engine* self = engine.get();
  work::Executor::Hooks hooks;
  hooks.progress_in_flight = [self] { return self->progress_in_flight(); };
  hooks.arm = [self] { return self->transport_->arm(); };
  hooks.wait_armed = [self](int timeout_ms) { self->transport_->wait_armed(timeout_ms); };
  hooks.interrupt = [self] { self->transport_->interrupt(); };
  engine->executor_ = std::make_unique<work::Executor>(std::move(hooks));
  engine->waiter_driver_ = std::make_shared<WaiterDriver>(self);
  engine->sent_at_once_ = std::make_shared<work::Work>();
  engine->sent_at_once_->complete(Status::kOk);
  log::info(setup.where, ": point-to-point over ", engine->transport_->describe(), ", ",
            engine->shm_ ? "collectives through shared memory"
            : engine->hierarchy_
                ? concat("collectives over point-to-point, or hierarchical where that is faster (",
                         engine->hierarchy_->nodes(), " nodes of ", engine->hierarchy_->local_size(), " ranks, ",
                         engine->hierarchy_->core_per_rank() ? "a CPU per rank" : "ranks sharing CPUs", ")")
                : "collectives over point-to-point",
            "; ", engine->memory_report());
  return engine;
}

Engine::~Engine() {
  // First: a waiter on another thread may be driving a send or receive; this waits for
  // its turn to end (each at most until its Work is done), and no turn starts after.
  if (waiter_driver_) waiter_driver_->detach();
  executor_.reset();
  // Cancelled, and said once: the program ended or dropped its communicator with
  // sends or receives it never waited for, which otherwise nobody would hear of.
  if (!in_flight_.empty()) {
    std::string labels;
    for (size_t i = 0; i < in_flight_.size() && i < 8; ++i) labels += concat(i ? "; " : "", p2p_label(in_flight_[i]));
    if (in_flight_.size() > 8) labels += concat("; and ", in_flight_.size() - 8, " more");
    log::warn(setup_.where, " was destroyed with ", in_flight_.size(), " send", in_flight_.size() == 1 ? "" : "s",
              " or receive", in_flight_.size() == 1 ? "" : "s", " still in flight, now cancelled (ABORTED): ", labels);
  }
  for (InFlight& entry : in_flight_) {
    transport_->release(entry.request);
    entry.work->complete(Status::kAborted,
                         concat(p2p_label(entry), " was still in flight when its communicator was destroyed"));
  }
}

void Engine::interrupt() { transport_->interrupt(); }

std::string Engine::memory_report() const {
  const size_t mapped = (shm_ ? shm_->mapped_bytes() : 0) + (hierarchy_ ? hierarchy_->mapped_bytes() : 0);
  return concat("scratch ", scratch_.held_bytes(), " bytes, shared memory ", mapped, " bytes mapped");
}

void* Engine::allocate_shared(size_t bytes) {
  void* memory = nullptr;
  executor_->run([&] {
    const uint64_t number = ++shared_allocations_;
    const std::string heading = concat("tutti_mem_alloc #", number, " of ", bytes, " bytes on ", setup_.where, ": ");
    if (shm_ == nullptr) {
      // Memory of this process alone: checked against the same limit as shared memory,
      // since aligned new rounds the size up and would wrap around near SIZE_MAX.
      if (std::string why = transport::shm::shared_size_error(bytes, 1); !why.empty()) {
        fail(Status::kInvalidArgument, concat(heading, "this is ", why));
      }
      auto* allocated = static_cast<unsigned char*>(::operator new[](bytes, kPrivateAlignment, std::nothrow));
      if (allocated == nullptr) {
        fail(Status::kNoMemory, concat(heading,
                                       "this process cannot have that much memory (check free -h and ulimit "
                                       "-v); ask for less"));
      }
      private_allocations_.emplace_back(allocated);
      memory = allocated;
      std::memset(memory, 0, bytes);  // zero-filled, as the shared memory of tmpfs is
      return;
    }
    const Deadline deadline = Deadline::after_ms(op_timeout_ms());
    try {
      memory = shm_->allocate_shared(*setup_.store, concat(setup_.prefix, "shm/memory/"), bytes, deadline);
    } catch (const Error& e) {
      fail(e.status(), concat(heading, e.what()));
    }
  });
  return memory;
}

bool Engine::free_shared(void* ptr) {
  bool freed = false;
  executor_->run([&] {
    if (shm_ != nullptr) {
      freed = shm_->free_shared(ptr);
      return;
    }
    auto found = std::find_if(private_allocations_.begin(), private_allocations_.end(),
                              [&](const auto& allocation) { return allocation.get() == ptr; });
    if (found == private_allocations_.end()) return;
    private_allocations_.erase(found);
    freed = true;
  });
  return freed;
}

OpContext& Engine::context_for(const char* name, uint32_t seq, int64_t now_ms) {
  OpContext& context = running_;
  context.name = name;
  context.seq = seq;
  context.call_check = 0;
  context.timeout_ms = op_timeout_ms_.load(std::memory_order_relaxed);
  context.deadline = Deadline::after_ms_from(now_ms, context.timeout_ms);
  context.arm_reports(now_ms, wait_report_ms_);
  context.progress_in_flight = nullptr;
  if (!in_flight_.empty() || transport_->sends_may_linger()) {
    context.progress_in_flight = [](void* engine) { return static_cast<Engine*>(engine)->progress_in_flight(); };
  }
  return context;
}

namespace {

bool repeats(const Call& call, const Call& last) {
  return call.kind == last.kind && call.kind != Kind::kAllToAllV && call.send == last.send && call.recv == last.recv &&
         call.count == last.count && call.dtype == last.dtype && call.op == last.op && call.root == last.root;
}

}  // namespace

const Engine::Plan& Engine::plan_for(const Call& call, const char* api) {
  // The last one used first: a loop that repeats one call finds it at the first look,
  // also when another call (a barrier between timed blocks) was planned after it.
  if (plans_held_ > 0 && repeats(call, plans_[last_used_plan_].call)) return plans_[last_used_plan_];
  for (size_t looked = 0, at = newest_plan_; looked < plans_held_; ++looked, at = (at + kPlansKept - 1) % kPlansKept) {
    if (repeats(call, plans_[at].call)) {
      last_used_plan_ = at;
      return plans_[at];
    }
  }
  // Worked out apart, so that a call refused here leaves the plans kept as they were.
  Plan plan;
  validate(call, setup_.rank, setup_.size, api);
  const size_t block = call.count * dtype_size(static_cast<Dtype>(call.dtype));
  plan.algorithm = selector_.choose(call.kind, block, setup_.size, shm_ != nullptr,
                                    hierarchy_ ? hierarchy_->shape() : HierarchyShape::kNone,
                                    hierarchy_ && hierarchy_->core_per_rank());
  plan.call = call;
  plan.call_check = folded_fingerprint(call);
  plan.facts = facts_of(call);
  if (call.kind == Kind::kAllToAllV) {
    // Never found again: kept apart, so that it pushes out none of the others.
    unkept_plan_ = plan;
    return unkept_plan_;
  }
  newest_plan_ = (newest_plan_ + 1) % kPlansKept;
  last_used_plan_ = newest_plan_;
  plans_[newest_plan_] = plan;
  plans_held_ = std::min(plans_held_ + 1, kPlansKept);
  return plans_[newest_plan_];
}

std::shared_ptr<work::Work> Engine::issue(const Call& call, const char* api, bool async) {
  if (is_point_to_point(call.kind)) {
    validate(call, setup_.rank, setup_.size, api);
    uint64_t number = next_p2p_++;
    if (async) {
      // Posted here when the communicator is idle, as MPI's isend is, and queued behind
      // the operations issued before it otherwise. Its waiter moves it (tutti_work_wait
      // and tutti_work_test drive it), and so do this rank's other calls; where a peer
      // may need it to move meanwhile (track_in_flight), the executor's thread, poked,
      // moves it as its news arrives. Posted and completed by that thread instead, each
      // message cost a wake-up or two (an 8-byte exchange between 2 ranks took 25-134 us,
      // where Open MPI's over the same UCX takes 1-17).
      // Traced on this thread: each thread's events reach the file in turn, and an end
      // recorded by the waiter (this thread) must not come out before a begin recorded
      // by the executor's, where the post was queued.
      if (trace::on()) trace_p2p_begin(setup_.trace_track, call, number);
      std::shared_ptr<work::Work> posted;
      bool move_alone = false;
      const bool inline_post = executor_->run_if_idle([&] {
        transport::Request* request = post_point_to_point(call);
        if (request == nullptr) {  // a send done as posted
          if (trace::on()) trace_p2p_end(setup_.trace_track, call.kind, number, Status::kOk, "");
          posted = sent_at_once_;
          return;
        }
        posted = new_point_to_point_work();
        move_alone = track_in_flight(request, call, api, number, *posted);
      });
      if (!inline_post) {
        posted = new_point_to_point_work();
        executor_->submit(
            [this, call, api, number](work::Work& work) {
              track_in_flight(post_point_to_point(call), call, api, number, work);
              return false;
            },
            posted);
      }
      executor_->share();
      if (move_alone) executor_->poke();
      keep_lingering_sends_moving();
      return posted;
    }
    executor_->run([&] {
      if (!trace::on()) return wait_point_to_point(post_point_to_point(call), call, api, number);
      trace_p2p_begin(setup_.trace_track, call, number);
      try {
        wait_point_to_point(post_point_to_point(call), call, api, number);
      } catch (const Error& error) {
        trace_p2p_end(setup_.trace_track, call.kind, number, error.status(), error.what());
        throw;
      }
      trace_p2p_end(setup_.trace_track, call.kind, number, Status::kOk, "");
    });
    keep_lingering_sends_moving();
    return nullptr;
  }
  const Plan& plan = plan_for(call, api);
  uint32_t seq = next_seq_++;
  if (async) {
    setup_.board->issued(seq, plan.facts, coarse_now_ms());
    Plan queued = plan;
    auto kept = keep_per_peer(queued.call, setup_.size);
    auto work = executor_->submit([this, queued, seq, kept](work::Work&) {
      run_collective(queued, seq, true);
      return true;
    });
    work->set_trace_track(setup_.trace_track);
    return work;
  }
  executor_->run([&] { run_collective(plan, seq, false); });
  keep_lingering_sends_moving();
  return nullptr;
}

void Engine::keep_lingering_sends_moving() {
  // A blocking call's last send may leave bytes that only a progress writes out, and
  // the caller may go on to wait on something else (another communicator, whose waits
  // drive only their own transport): the executor's thread, idle, progresses this one.
  if (transport_->sends_may_linger()) executor_->keep_progressing();
}

std::string Engine::p2p_timed_out(const std::string& label, int64_t timeout_ms, Kind kind, int peer) {
  return concat(label, " timed out after ", timeout_ms, " ms: rank ", peer,
                kind == Kind::kSend ? " did not receive it" : " did not send it",
                "; check that the peer makes the matching call with the same tag");
}

uint32_t Engine::enter_device_collective(const Call& call) {
  uint32_t seq = next_seq_++;
  setup_.board->started_now(seq, facts_of(call), coarse_now_ms());
  setup_.board->finished(Status::kOk);
  return seq;
}

std::string Engine::p2p_label(const char* api, uint64_t number, int peer, int tag) const {
  return concat(api, " #", number, " (peer ", peer, ", tag ", tag, ") on ", setup_.where);
}

void Engine::run_collective(const Plan& plan, uint32_t seq, bool queued) {
  const Call& call = plan.call;
  const int64_t now_ms = coarse_now_ms();
  OpContext& context = context_for(kind_name(call.kind), seq, now_ms);
  if (setup_.fault->raised()) [[unlikely]]
    context.fail_stopped("its turn to run");
  if (queued) {
    setup_.board->started(seq, context.name, now_ms);
  } else {
    setup_.board->started_now(seq, plan.facts, now_ms);
  }
  const bool traced = trace::on();
  if (traced) trace_collective_begin(setup_.trace_track, call, seq);
  try {
    if (check_fingerprints_) verify_fingerprints(*transport_, context, call);
    dispatch(plan, context);
  } catch (const Error& error) {
    setup_.board->finished(error.status());
    if (traced) trace_collective_end(setup_.trace_track, error.status(), nullptr, nullptr, error.what());
    if (error.status() == Status::kPeerLost) explain_peer_lost(error);
    if (error.status() != Status::kTimeout) throw;
    std::string failed;
    std::string absent = setup_.board->absent_from(seq, Deadline::after_ms(2000), &failed);
    std::string message;
    if (!absent.empty()) {
      // The ranks that never came first; then whose data this rank waited for, which is
      // often only the neighbour that waits for them in turn.
      std::string what = error.what(), waited;
      if (size_t at = what.find(" waiting for "); at != std::string::npos) {
        waited = concat(" This rank was", what.substr(at), ".");
        what.resize(at);
      }
      message = concat(what, "; ranks that had not joined it: ", absent, ".", waited,
                       " Check that every rank makes the same collective calls in the same order, or raise "
                       "op_timeout_ms (TUTTI_OP_TIMEOUT_MS)");
    } else if (!failed.empty()) {
      message = concat(error.what(), ". Every rank had joined it, but ranks ", failed,
                       " failed it, so data this rank waited for never came; their own errors say why");
    } else {
      message = concat(error.what(), ". Every rank had joined it: one is slow, or its transport is stuck");
    }
    log::warn(message, "\nRecent operations of ", setup_.where, ":\n", setup_.board->recent_operations());
    fail(Status::kTimeout, message);
  }
  setup_.board->finished(Status::kOk);
  if (traced) {
    trace_collective_end(setup_.trace_track, Status::kOk, algorithm_name(plan.algorithm),
                         transport_name(plan.algorithm), "");
  }
}

void Engine::explain_peer_lost(const Error& error) {
  // The transport can notice a dead peer (its pidfd, a broken endpoint) a moment before
  // the store's loss event arrives, which names the peer's host and pid and what it
  // was doing. Worth a short wait: the operation has failed either way.
  auto deadline = Deadline::after_ms(kExplainLossMs);
  while (!setup_.fault->raised() && !deadline.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (setup_.fault->raised() && std::string_view(error.what()).find(setup_.fault->why()) == std::string_view::npos) {
    fail(Status::kPeerLost, concat(error.what(), "; ", setup_.fault->why()));
  }
}

void Engine::dispatch(const Plan& plan, OpContext& context) {
  const Call& call = plan.call;
  const int rank = setup_.rank;
  const int size = setup_.size;
  const Dtype dtype = static_cast<Dtype>(call.dtype);
  const ReduceOp op = static_cast<ReduceOp>(call.op);
  const size_t block = call.count * dtype_size(dtype);
  const Algorithm algorithm = plan.algorithm;
  const void* send = call.send;
  void* recv = call.recv;
  auto* shm = shm_.get();

  if (call.kind == Kind::kBroadcast && rank == call.root && send != recv && block > 0) {
    std::memcpy(recv, send, block);
  }
  if (call.kind == Kind::kAllToAll && send == recv && block > 0) {
    // In place: stage the outgoing blocks, since every block is overwritten by an
    // incoming one while it may still be waiting to leave.
    void* staged = context.scratch->get(2, block * size);
    std::memcpy(staged, send, block * size);
    send = staged;
  }
  if (algorithm == Algorithm::kShm) {
    switch (call.kind) {
      case Kind::kAllReduce: return shm->all_reduce(send, recv, call.count, dtype, op, context);
      case Kind::kReduce: return shm->reduce(send, recv, call.count, dtype, op, call.root, context);
      case Kind::kBroadcast: return shm->broadcast(recv, block, call.root, context);
      case Kind::kAllGather: return shm->all_gather(send, recv, block, context);
      case Kind::kReduceScatter: return shm->reduce_scatter(send, recv, call.count, dtype, op, context);
      case Kind::kGather: return shm->gather(send, recv, block, call.root, context);
      case Kind::kScatter: return shm->scatter(send, recv, block, call.root, context);
      case Kind::kAllToAll: return shm->all_to_all(send, recv, block, context);
      case Kind::kBarrier: return shm->barrier(context);
      default: break;
    }
  }
  // Only messages carry the call's fingerprint; shared memory compares shapes instead.
  context.call_check = plan.call_check;
  if (algorithm == Algorithm::kHierarchical) {
    switch (call.kind) {
      case Kind::kAllReduce: return hierarchy_->all_reduce(send, recv, call.count, dtype, op, context);
      case Kind::kAllGather: return hierarchy_->all_gather(send, recv, block, context);
      case Kind::kReduceScatter: return hierarchy_->reduce_scatter(send, recv, call.count, dtype, op, context);
      case Kind::kBroadcast: return hierarchy_->broadcast(recv, block, call.root, context);
      case Kind::kReduce: return hierarchy_->reduce(send, recv, call.count, dtype, op, call.root, context);
      case Kind::kGather: return hierarchy_->gather(send, recv, block, call.root, context);
      case Kind::kScatter: return hierarchy_->scatter(send, recv, block, call.root, context);
      case Kind::kBarrier: return hierarchy_->barrier(context);
      case Kind::kAllToAll: return hierarchy_->all_to_all(send, recv, block, context);
      default: fail(Status::kInternal, concat(context.label(), ": no hierarchical algorithm; please report it"));
    }
  }
  Exchange x(*transport_, context);
  using A = Algorithm;
  switch (call.kind) {
    case Kind::kAllReduce: return run_all_reduce(algorithm, x, send, recv, call.count, dtype, op);
    case Kind::kReduce:
      if (algorithm == A::kRing) return reduce_ring(x, send, recv, call.count, dtype, op, call.root);
      return reduce_binomial(x, send, recv, call.count, dtype, op, call.root);
    case Kind::kBroadcast:
      if (algorithm == A::kScatterAllGather) return broadcast_scatter_all_gather(x, recv, block, call.root);
      return broadcast_binomial(x, recv, block, call.root);
    case Kind::kAllGather: return run_all_gather(algorithm, x, send, recv, block);
    case Kind::kReduceScatter: return run_reduce_scatter(algorithm, x, send, recv, call.count, dtype, op);
    case Kind::kGather:
      if (algorithm == A::kLinear) return gather_linear(x, send, recv, block, call.root);
      return gather_binomial(x, send, recv, block, call.root);
    case Kind::kScatter:
      if (algorithm == A::kLinear) return scatter_linear(x, send, recv, block, call.root);
      return scatter_binomial(x, send, recv, block, call.root);
    case Kind::kAllToAll:
      if (algorithm == A::kLinear) return all_to_all_linear(x, send, recv, block);
      return all_to_all_pairwise(x, send, recv, block);
    case Kind::kAllToAllV: {
      const PeerBlocks blocks = PeerBlocks::per_peer(call.per_peer, dtype_size(dtype));
      if (algorithm == A::kLinear) return all_to_all_linear(x, send, recv, blocks);
      return all_to_all_pairwise(x, send, recv, blocks);
    }
    case Kind::kBarrier: return barrier_dissemination(x);
    default: fail(Status::kInternal, concat(context.label(), ": no algorithm for this call; please report it"));
  }
}

transport::Request* Engine::post_point_to_point(const Call& call) {
  size_t bytes = call.count * dtype_size(static_cast<Dtype>(call.dtype));
  transport::Tag tag{.value = static_cast<uint32_t>(call.tag), .space = transport::TagSpace::kUser};
  if (call.kind == Kind::kSend) return transport_->post_send(call.root, tag, call.send, bytes);
  return transport_->post_recv(call.root, tag, call.recv, bytes);
}

bool Engine::progress_in_flight() {
  if (in_flight_.empty()) {
    // Over TCP, UCX completes a send while its last bytes may still wait in the
    // endpoint's buffer for the socket to take them, which only a progress does. A
    // rank that then waits in shared memory (its node's step of a hierarchical
    // collective) must still let them out: on 8 ranks on 2 emulated nodes, a binomial
    // reduce's leaf went on to the next call's node-local step while its parent, on
    // the same node, waited for those bytes, and both waited for good. (UCX's own
    // endpoint flush would not do: over TCP it waits for the peer to acknowledge.)
    if (transport_->sends_may_linger()) {
      const int64_t now = steady_now_ns();
      if (now - lingering_progressed_ns_ >= kLingerProgressNs) {
        lingering_progressed_ns_ = now;
        transport_->progress();
      }
    }
    return false;
  }
  transport_->progress();
  for (size_t i = 0; i < in_flight_.size();) {
    if (settle(in_flight_[i])) {
      transport_->release(in_flight_[i].request);
      in_flight_[i] = std::move(in_flight_.back());
      in_flight_.pop_back();
    } else {
      ++i;
    }
  }
  return !in_flight_.empty();
}

bool Engine::settle(InFlight& entry) {
  bool finished = false;
  try {
    finished = transport_->done(entry.request);
    if (finished) entry.work->complete(Status::kOk);
  } catch (const Error& error) {
    finished = true;
    entry.work->complete(error.status(), concat(p2p_label(entry), ": ", error.what()));
  }
  if (!finished && setup_.fault->raised()) {
    finished = true;
    entry.work->complete(setup_.fault->status(), concat(p2p_label(entry), " stopped: ", setup_.fault->why()));
  }
  // The coarse clock: a tick late on a timeout of seconds, and read on every look.
  if (!finished && entry.deadline.expired_coarse()) {
    finished = true;
    entry.work->complete(Status::kTimeout, p2p_timed_out(p2p_label(entry), entry.timeout_ms, entry.kind, entry.peer));
  }
  if (finished && trace::on()) {
    trace_p2p_end(setup_.trace_track, entry.kind, entry.number, entry.work->status(), entry.work->message());
  }
  return finished;
}

std::shared_ptr<work::Work> Engine::new_point_to_point_work() const {
  auto work = std::make_shared<work::Work>();
  work->set_trace_track(setup_.trace_track);
  work->set_driver(waiter_driver_);
  return work;
}

bool Engine::track_in_flight(transport::Request* request, const Call& call, const char* api, uint64_t number,
                             work::Work& work) {
  // Bounded like a blocking one: from the moment it is posted.
  const int64_t timeout_ms = op_timeout_ms_.load(std::memory_order_relaxed);
  in_flight_.push_back(InFlight{request, work.shared_from_this(), api,
                                Deadline::after_ms_from(coarse_now_ms(), timeout_ms), timeout_ms, call.kind, call.root,
                                call.tag, number});
  if (settle(in_flight_.back())) {
    transport_->release(in_flight_.back().request);
    in_flight_.pop_back();
    return false;
  }
  // A send in flight, and a receive UCX may take by rendezvous (which the sender's own
  // completion waits for), move while nobody waits on them: the peer's next step may
  // depend on them while this rank waits on another communicator. A smaller receive
  // only this rank waits for, and its waiter moves it.
  return call.kind == Kind::kSend || call.count * dtype_size(static_cast<Dtype>(call.dtype)) >= kReceiveMovedAloneBytes;
}

bool Engine::drive_point_to_point(const work::Work& work, int64_t timeout_ms, const std::atomic<bool>& leave) {
  return executor_->run_if_idle([&] {
    // Its own deadline bounds it (settle); timeout_ms is the waiter's.
    const Deadline until = timeout_ms > 0 ? Deadline::after_ms(timeout_ms) : Deadline::passed();
    TransportWait waiting(*transport_);
    while (true) {
      progress_in_flight();
      if (work.done() || timeout_ms == 0 || (timeout_ms > 0 && until.expired())) return;
      // The waiter may be on another thread than the communicator's calls (tutti.h:
      // tutti_work_wait from any thread): a call queued behind this turn, or a destroy,
      // gets the communicator now, and the waiter its next turn after.
      if (executor_->has_queued() || leave.load(std::memory_order_relaxed)) return;
      waiting.step();
    }
  });
}

void Engine::wait_point_to_point(transport::Request* request, const Call& call, const char* api, uint64_t number) {
  OpContext& context = context_for(kind_name(call.kind), 0, coarse_now_ms());
  struct Release {
    transport::Transport& transport;
    transport::Request* request;
    ~Release() { transport.release(request); }
  } release{*transport_, request};
  // What another rank's timeout report says this one is doing instead.
  setup_.board->waiting(kind_name(call.kind), call.root, call.tag);
  struct DoneWaiting {
    health::ActivityBoard* board;
    ~DoneWaiting() { board->done_waiting(); }
  } done_waiting{setup_.board};
  auto done = [&] {
    try {
      return transport_->done(request);
    } catch (const Error& error) {
      fail(error.status(), concat(p2p_label(api, number, call.root, call.tag), ": ", error.what()));
    }
  };
  TransportWait waiting(*transport_);
  while (!done()) {
    progress_in_flight();
    waiting.step();
    // The wait may have ended on the message and on the news that stops this call at
    // once: the message, already here, wins.
    bool stopped = setup_.fault->raised(), alarmed = context.alarm.expired_coarse();
    if (stopped || alarmed) {
      transport_->progress();
      if (done()) return;
    }
    if (stopped) setup_.fault->rethrow(concat(p2p_label(api, number, call.root, call.tag), " stopped"));
    if (alarmed && context.deadline.expired()) {
      fail(Status::kTimeout,
           p2p_timed_out(p2p_label(api, number, call.root, call.tag), context.timeout_ms, call.kind, call.root));
    }
    if (alarmed && context.report_due())
      report_point_to_point_wait(context, call, p2p_label(api, number, call.root, call.tag));
  }
}

void Engine::report_wait(void* engine, const OpContext& context, const char* waiting_for) {
  const EngineSetup& setup = static_cast<Engine*>(engine)->setup_;
  std::string failed;
  std::string absent = setup.board->absent_from(context.seq, Deadline::after_ms(kReportStoreMs), &failed);
  std::string whom = !absent.empty()   ? concat("; ranks that have not joined it: ", absent)
                     : !failed.empty() ? concat("; every rank has joined it, but ranks ", failed,
                                                " failed it, so what it waits for may never come")
                                       : std::string("; every rank has joined it");
  log::warn(context.label(), " has waited ", duration_text(coarse_now_ms() - context.started_ms), " for ", waiting_for,
            whom, "; it times out in ", duration_text(context.deadline.remaining_ms()), " (TUTTI_OP_TIMEOUT_MS)");
}

void Engine::report_point_to_point_wait(const OpContext& context, const Call& call, const std::string& label) {
  log::warn(label, " has waited ", duration_text(coarse_now_ms() - context.started_ms), " for rank ", call.root,
            call.kind == Kind::kSend ? " to receive it" : " to send it", "; rank ", call.root, " is ",
            setup_.board->whereabouts(call.root, Deadline::after_ms(kReportStoreMs)), "; it times out in ",
            duration_text(context.deadline.remaining_ms()), " (TUTTI_OP_TIMEOUT_MS)");
}

}  // namespace tutti::collectives
