// The Work calls of tutti.h: wait, test, release, and a stream's wait on a device
// operation. Each holds the operation it found (work_handles::find) for as long as it
// runs, so a release on another thread cannot pull it away.
#include "capi/guard.h"
#include "capi/work_handles.h"

namespace {

tutti_status wait_for(tutti::work::Work& work, int64_t timeout_ms, const char* api) {
  if (timeout_ms < -1) {
    return tutti::capi::invalid_argument(
        api,
        tutti::concat("timeout_ms ", timeout_ms, " is negative; pass >= 0, or -1 for the operation's own timeout"));
  }
  // -1 waits for completion, which the operation's own timeout bounds.
  bool finished = false;
  tutti_status waited = tutti::capi::guarded(api, [&] { finished = work.wait_for(timeout_ms); });
  if (waited != TUTTI_OK) return waited;
  // Not a failure: the message is there for callers that report it anyway.
  if (!finished) {
    return tutti::capi::fail_with(TUTTI_INPROGRESS,
                                  tutti::concat(api, ": the operation did not finish within ", timeout_ms,
                                                " ms; it is still running: wait again, test it, or release it"));
  }
  if (work.status() == tutti::Status::kOk) return TUTTI_OK;
  return tutti::capi::fail_with(static_cast<tutti_status>(work.status()), work.message());
}

}  // namespace

extern "C" {

TUTTI_API tutti_status tutti_work_wait(tutti_work* handle, int64_t timeout_ms) {
  const char* api = "tutti_work_wait";
  std::shared_ptr<tutti::work::Work> work = tutti::capi::work_handles::find(handle, api);
  if (!work) return TUTTI_ERR_INVALID_ARGUMENT;
  return wait_for(*work, timeout_ms, api);
}

TUTTI_API tutti_status tutti_work_test(tutti_work* handle, int* done) {
  const char* api = "tutti_work_test";
  std::shared_ptr<tutti::work::Work> work = tutti::capi::work_handles::find(handle, api);
  if (!work) return TUTTI_ERR_INVALID_ARGUMENT;
  if (done == nullptr) return tutti::capi::invalid_argument(api, "done is NULL; pass the address of an int");
  return tutti::capi::guarded(api, [&] { *done = work->test() ? 1 : 0; });
}

TUTTI_API tutti_status tutti_work_wait_stream(tutti_work* handle, void* stream) {
  const char* api = "tutti_work_wait_stream";
  std::shared_ptr<tutti::work::Work> work = tutti::capi::work_handles::find(handle, api);
  if (!work) return TUTTI_ERR_INVALID_ARGUMENT;
  if (work->fence() == nullptr) return wait_for(*work, -1, api);
  if (work->done() && work->status() != tutti::Status::kOk) {
    return tutti::capi::fail_with(static_cast<tutti_status>(work->status()), work->message());
  }
  return tutti::capi::guarded(api, [&] { work->fence()->make_stream_wait(stream); });
}

TUTTI_API tutti_status tutti_work_release(tutti_work* handle) {
  if (handle == nullptr) return TUTTI_OK;
  return tutti::capi::work_handles::remove(handle, "tutti_work_release") ? TUTTI_OK : TUTTI_ERR_INVALID_ARGUMENT;
}

}  // extern "C"
