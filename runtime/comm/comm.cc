#include "runtime/comm/comm.h"

#include "runtime/comm/dump_signal.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/identity.h"
#include "runtime/common/log.h"
#include "runtime/rendezvous/store_access.h"
#include "runtime/store/heartbeat_settings.h"
#include "runtime/trace/trace.h"

namespace tutti::comm {

namespace {

// Each world communicator a process creates gets the next generation, so a program
// that destroys and re-creates its world under one long-lived store (tutti launch)
// meets under fresh keys. Every rank creates its worlds in the same order.
std::string next_world_prefix() {
  static std::atomic<int> generation{0};
  return concat("world.", generation++, "/");
}

}  // namespace

std::unique_ptr<Comm> Comm::init(const Options& options, rendezvous::InitCancel* cancel) {
  rendezvous::Plan plan = rendezvous::make_plan(options.request, rendezvous::process_environment());
  log::set_identity(concat("rank ", plan.rank, "/", plan.world_size));
  trace::start(plan.rank, process_identity(), options.trace_folder);
  return trace::span("init", trace::kControlTrack, [&] { return init_as_planned(options, plan, cancel); });
}

std::unique_ptr<Comm> Comm::init_as_planned(const Options& options, const rendezvous::Plan& plan,
                                            rendezvous::InitCancel* cancel) {
  auto deadline = Deadline::after_ms(options.init_timeout_ms);

  std::unique_ptr<Comm> comm = reach_store(options, plan, deadline, cancel, "tutti_comm_init");
  comm->name_ = options.name;
  comm->prefix_ = next_world_prefix();
  // From here a cancel shuts the store client down, which ends any wait on it; the
  // guard lets go of the client before the Comm (and the client) can go.
  struct Unwatch {
    rendezvous::InitCancel* cancel;
    ~Unwatch() {
      if (cancel != nullptr) cancel->watch(nullptr);
    }
  } unwatch{cancel};
  if (cancel != nullptr) cancel->watch(comm->store_.get());
  comm->place_ = trace::span("meeting", trace::kControlTrack, [&] {
    return rendezvous::meet(*comm->store_, comm->prefix_, plan, process_identity(), deadline, "tutti_comm_init");
  });
  comm->joined_ = true;
  comm->start_collectives(deadline);
  log::info("joined ", comm->describe(), " through ", plan.init_method, " (launcher: ", plan.launcher, ")");
  return comm;
}

std::unique_ptr<Comm> Comm::reach_store(const Options& options, const rendezvous::Plan& plan, Deadline deadline,
                                        rendezvous::InitCancel* cancel, const char* api) {
  std::unique_ptr<Comm> comm(new Comm());
  comm->loop_ = loop::Loop::shared();
  comm->init_method_ = plan.init_method;
  comm->init_timeout_ms_ = options.init_timeout_ms;
  comm->op_timeout_ms_ = options.op_timeout_ms;
  comm->node_key_ = plan.node_key;
  comm->store_owner_ = plan.store_owner;
  comm->store_secret_ = plan.secret;
  rendezvous::StoreAccess access = rendezvous::reach_store(comm->loop_, plan, deadline, cancel, api);
  comm->hosted_ = std::move(access.hosted);
  comm->waits_for_all_on_leave_ = comm->hosted_ != nullptr;
  comm->store_ = std::move(access.client);
  comm->store_host_ = access.host;
  comm->store_port_ = access.port;
  return comm;
}

Comm::~Comm() {
  unregister_for_dump(this);
  // With the store gone (or this rank declared lost by it) there is no one to leave.
  bool store_gone = monitor_ && monitor_->store_lost();
  bool watched_by_monitor = monitor_ != nullptr;  // whose end leaves the store's watch
  device_.reset();
  monitor_.reset();
  engine_.reset();
  trace::flush();
  if (!joined_ || fault_.status() == Status::kAborted || store_gone) return;
  if (!watched_by_monitor) rendezvous::unwatch(*store_);  // init failed after the meeting
  rendezvous::leave(*store_, prefix_, rank(), size(), waits_for_all_on_leave_, Deadline::after_ms(init_timeout_ms_));
}

std::string Comm::describe() const { return concat("comm \"", name_, "\" (rank ", rank(), " of ", size(), ")"); }

void Comm::fail_unusable(const char* api) const {
  fail(fault_.status(), concat(api, ": ", describe(), " is unusable: ", fault_.why(),
                               "; destroy it and create a new one (tutti_comm_shrink keeps the ranks still alive)"));
}

void Comm::start_collectives(Deadline deadline) {
  collectives::EngineSetup setup;
  setup.store = store_.get();
  setup.prefix = prefix_;
  setup.rank = rank();
  setup.size = size();
  setup.one_node = local_size() == size();
  setup.local_rank = local_rank();
  setup.local_size = local_size();
  setup.node_rank = node_rank();
  setup.where = describe();
  setup.op_timeout_ms = op_timeout_ms_;
  setup.fault = &fault_;
  board_ = std::make_unique<health::ActivityBoard>(*store_, prefix_, rank(), size());
  setup.board = board_.get();
  setup.trace_track = trace::add_track(name_);
  engine_ = collectives::Engine::create(setup, deadline);

  health::MonitorSetup watch;
  watch.loop = loop_;
  watch.store = store_.get();
  watch.prefix = prefix_;
  watch.rank = rank();
  watch.where = describe();
  watch.store_owner = store_owner_;
  store::read_heartbeat_settings(&watch.interval_ms, &watch.timeout_ms);
  watch.board = board_.get();
  watch.on_failure = [this](Status status, const std::string& why) { lose(status, why); };
  monitor_ = health::Monitor::start(std::move(watch));
  device_ = device::open_device_path(device_setup(), false, nullptr);
  register_for_dump(this, loop_, deadline);
}

device::DeviceSetup Comm::device_setup() {
  device::DeviceSetup setup;
  setup.loop = loop_;
  setup.store = store_.get();
  setup.prefix = prefix_;
  setup.rank = rank();
  setup.size = size();
  setup.local_rank = local_rank();
  setup.where = describe();
  setup.fault = &fault_;
  setup.board = board_.get();
  setup.engine = engine_.get();
  return setup;
}

device::DevicePath& Comm::device_path(const char* api) {
  check_usable(api);
  if (!device_) {
    try {
      device_ = device::open_device_path(device_setup(), true, nullptr);
    } catch (const Error& error) {
      fail(error.status(), concat(api, ": ", error.what()));
    }
  }
  return *device_;
}

void Comm::set_memory(device::Memory memory) {
  // Host memory needs no CUDA: a device path is opened only to find or use devices.
  if (memory == device::Memory::kHost && !device_) return;
  device_path("tutti_comm_set_memory").set_memory(memory);
}

void Comm::set_stream(void* stream) { device_path("tutti_comm_set_stream").set_stream(stream); }

void Comm::set_device(int device) { device_path("tutti_comm_set_device").set_device(device); }

std::string Comm::dump() const {
  std::string state = fault_.raised() ? concat(" is unusable (", fault_.why(), ");") : std::string(",");
  return concat("tutti: ", describe(), state, " recent collectives:\n", board_->recent_operations());
}

void Comm::lose(Status status, const std::string& why) {
  fault_.raise(status, why);
  // Wakes a wait in the transport at once; waits elsewhere see the fault within a
  // few milliseconds.
  engine_->interrupt();
}

std::vector<int> Comm::lost_ranks() const { return monitor_ ? monitor_->lost_ranks() : std::vector<int>{}; }

std::shared_ptr<work::Work> Comm::issue(const Call& call, const char* api, bool async) {
  check_usable(api);
  // Host-only processes never open a device path: this test is all they pay (the
  // rest is out of line, so that this stays a tail call without a stack frame).
  if (device_ != nullptr) [[unlikely]]
    return issue_with_device_path(call, api, async);
  return engine_->issue(call, api, async);
}

std::shared_ptr<work::Work> Comm::issue_with_device_path(const Call& call, const char* api, bool async) {
  if (device_->is_device(call, api)) return device_->issue(call, api, async);
  return engine_->issue(call, api, async);
}

void* Comm::allocate_shared(size_t bytes) {
  check_usable("tutti_mem_alloc");
  return engine_->allocate_shared(bytes);
}

bool Comm::free_shared(void* ptr) { return engine_->free_shared(ptr); }

void Comm::set_op_timeout(int64_t op_timeout_ms) {
  op_timeout_ms_ = op_timeout_ms;
  engine_->set_op_timeout(op_timeout_ms);
}

void Comm::abort() {
  trace::instant(trace::kControlTrack, "abort", "control", describe());
  fault_.raise(Status::kAborted, concat(describe(), " was aborted (tutti_comm_abort)"));
  if (engine_) engine_->interrupt();
  store_->shutdown(Status::kAborted, concat("tutti_comm_abort was called on ", describe()));
}

}  // namespace tutti::comm
