// The Work calls of tutti.h: wait, test, release, and a stream's wait on a device operation.
#include "capi/guard.h"
#include "capi/handle.h"

namespace {

tutti::work::Work* live_work(const tutti_work* handle, const char* api) {
  if (handle == nullptr) {
    tutti::capi::invalid_argument(api, "work is NULL; pass the tutti_work* an operation returned");
    return nullptr;
  }
  if (handle->tag != tutti_work::kLiveTag || !handle->impl) {
    tutti::capi::invalid_argument(api, "work is not a live tutti_work (already released?); wait on each work "
                                       "before releasing it, and release it once");
    return nullptr;
  }
  return handle->impl.get();
}

}  // namespace

extern "C" {

TUTTI_API tutti_status tutti_work_wait(tutti_work* handle, int64_t timeout_ms) {
  const char* api = "tutti_work_wait";
  tutti::work::Work* work = live_work(handle, api);
  if (work == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (timeout_ms < -1) {
    return tutti::capi::invalid_argument(
        api, tutti::concat("timeout_ms ", timeout_ms, " is negative; pass >= 0, or -1 for the operation's own timeout"));
  }
  // -1 waits for completion, which the operation's own timeout bounds.
  // Not a failure: the message is there for callers that report it anyway.
  if (!work->wait_for(timeout_ms)) {
    return tutti::capi::fail_with(TUTTI_INPROGRESS,
                                  tutti::concat(api, ": the operation did not finish within ", timeout_ms,
                                                " ms; it is still running: wait again, test it, or release it"));
  }
  if (work->status() == tutti::Status::kOk) return TUTTI_OK;
  return tutti::capi::fail_with(static_cast<tutti_status>(work->status()), work->message());
}

TUTTI_API tutti_status tutti_work_test(tutti_work* handle, int* done) {
  const char* api = "tutti_work_test";
  tutti::work::Work* work = live_work(handle, api);
  if (work == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (done == nullptr) return tutti::capi::invalid_argument(api, "done is NULL; pass the address of an int");
  *done = work->test() ? 1 : 0;
  return TUTTI_OK;
}

TUTTI_API tutti_status tutti_work_wait_stream(tutti_work* handle, void* stream) {
  const char* api = "tutti_work_wait_stream";
  tutti::work::Work* work = live_work(handle, api);
  if (work == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  if (work->fence() == nullptr) return tutti_work_wait(handle, -1);
  if (work->done() && work->status() != tutti::Status::kOk) {
    return tutti::capi::fail_with(static_cast<tutti_status>(work->status()), work->message());
  }
  return tutti::capi::guarded(api, [&] { work->fence()->make_stream_wait(stream); });
}

TUTTI_API tutti_status tutti_work_release(tutti_work* handle) {
  if (handle == nullptr) return TUTTI_OK;
  if (live_work(handle, "tutti_work_release") == nullptr) return TUTTI_ERR_INVALID_ARGUMENT;
  handle->tag = tutti_work::kDeadTag;
  handle->impl.reset();
  delete handle;
  return TUTTI_OK;
}

}  // extern "C"
