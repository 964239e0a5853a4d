// The draft calls that join the job without blocking: tutti_comm_init_start and
// tutti_comm_init_wait (tutti.h, "draft API"). Compiled only with
// TUTTI_BUILD_DRAFT_API (CMake option of the same name).
#ifdef TUTTI_BUILD_DRAFT_API

#include <chrono>
#include <string>

#include "capi/config_options.h"
#include "capi/guard.h"
#include "capi/handle.h"
#include "capi/last_error.h"
#include "runtime/rendezvous/plan.h"

namespace {

// The init thread's body: the outcome goes to pending, under its mutex.
void run_init(tutti::capi::PendingInit* pending, const tutti::comm::Options& options) {
  std::unique_ptr<tutti::comm::Comm> comm;
  tutti_status status =
      tutti::capi::guarded("tutti_comm_init_start", [&] { comm = tutti::comm::Comm::init(options, &pending->cancel); });
  std::string message = status == TUTTI_OK ? "" : tutti::capi::last_error();
  // Whatever a cancelled init failed with (a store client shut down mid-call, ...),
  // the caller asked for it: ABORTED, saying what the init was doing.
  if (status != TUTTI_OK && status != TUTTI_ERR_ABORTED && pending->cancel.requested()) {
    message = tutti::concat("the init was given up (tutti_comm_abort or tutti_comm_destroy); it had got to: ", message);
    status = TUTTI_ERR_ABORTED;
  }
  std::lock_guard<std::mutex> lock(pending->mutex);
  pending->result = std::move(comm);
  pending->status = status;
  pending->message = std::move(message);
  pending->done = true;
  pending->finished.notify_all();
}

}  // namespace

extern "C" {

TUTTI_API tutti_status tutti_comm_init_start(const tutti_config* config, tutti_comm** out) {
  const char* api = "tutti_comm_init_start";
  if (out == nullptr) return tutti::capi::invalid_argument(api, "out is NULL; pass the address of a tutti_comm*");
  *out = nullptr;
  tutti_comm* handle = nullptr;
  tutti_status status = tutti::capi::guarded(api, [&] {
    tutti::comm::Options options = tutti::capi::comm_options(config);
    // What the config and the environment alone show is wrong fails here, at once;
    // the init thread makes the same plan again.
    tutti::rendezvous::make_plan(options.request, tutti::rendezvous::process_environment());
    auto owned = std::make_unique<tutti_comm>();
    owned->pending = std::make_unique<tutti::capi::PendingInit>();
    tutti::capi::PendingInit* pending = owned->pending.get();
    pending->thread = std::thread(run_init, pending, options);
    handle = owned.release();
  });
  if (status != TUTTI_OK) return status;
  *out = handle;
  return tutti::capi::fail_with(TUTTI_INPROGRESS,
                                tutti::concat(api, ": joining the job; call tutti_comm_init_wait until it returns OK"));
}

TUTTI_API tutti_status tutti_comm_init_wait(tutti_comm* comm, int64_t timeout_ms) {
  const char* api = "tutti_comm_init_wait";
  if (comm == nullptr || comm->tag != tutti_comm::kLiveTag || (!comm->impl && !comm->pending)) {
    tutti::capi::refuse_comm(comm, api);
    return TUTTI_ERR_INVALID_ARGUMENT;
  }
  if (comm->impl) return TUTTI_OK;
  if (timeout_ms < -1) {
    return tutti::capi::invalid_argument(
        api, tutti::concat("timeout_ms ", timeout_ms, " is negative; pass >= 0, or -1 for the init's own timeout"));
  }
  tutti::capi::PendingInit& pending = *comm->pending;
  std::unique_lock<std::mutex> lock(pending.mutex);
  auto done = [&] { return pending.done; };
  if (timeout_ms < 0) {
    pending.finished.wait(lock, done);  // the init's own init_timeout_ms bounds it
  } else if (!pending.finished.wait_for(lock, std::chrono::milliseconds(timeout_ms), done)) {
    return tutti::capi::fail_with(TUTTI_INPROGRESS, tutti::concat(api, ": still joining the job after ", timeout_ms,
                                                                  " ms; wait again, abort or destroy it"));
  }
  if (pending.status != TUTTI_OK) return tutti::capi::fail_with(pending.status, pending.message);
  std::unique_ptr<tutti::comm::Comm> ready = std::move(pending.result);
  lock.unlock();
  std::unique_ptr<tutti::capi::PendingInit> finished;
  {
    std::lock_guard<std::mutex> handover(comm->mutex);
    comm->impl = std::move(ready);
    if (comm->pending->cancel.requested()) comm->impl->abort();
    finished = std::move(comm->pending);
  }
  finished.reset();  // joins the thread, which has ended
  return TUTTI_OK;
}

}  // extern "C"

#endif  // TUTTI_BUILD_DRAFT_API
