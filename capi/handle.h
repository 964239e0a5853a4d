// The opaque communicator handle behind tutti.h, starting with a tag that every entry
// point checks (STYLE G4): a stray or released pointer is then, most of the time, a
// clear TUTTI_ERR_INVALID_ARGUMENT instead of a crash. Work handles are kept apart
// (work_handles.h), since a release may race a wait on them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "capi/pending_init.h"
#include "runtime/comm/comm.h"

struct tutti_comm {
  static constexpr uint32_t kLiveTag = 0x4d4f4354;  // "TCOM"
  static constexpr uint32_t kDeadTag = 0x44414544;  // "DEAD"
  uint32_t tag = kLiveTag;
  std::unique_ptr<tutti::comm::Comm> impl;  // null while a started init runs
  // A started init (tutti_comm_init_start) until tutti_comm_init_wait collects it.
  // mutex guards the hand-over from pending to impl against tutti_comm_abort, which
  // any thread may call at any time.
  std::unique_ptr<tutti::capi::PendingInit> pending;
  std::mutex mutex;
};

namespace tutti::capi {

// Sets the last error for a handle that live_comm refuses.
[[gnu::cold, gnu::noinline]] void refuse_comm(const tutti_comm* handle, const char* api);

// The comm behind handle, or nullptr (with the last error set) when handle is NULL or
// not a live tutti_comm. Inline, with the message out of line: every call runs it.
inline tutti::comm::Comm* live_comm(const tutti_comm* handle, const char* api) {
  if (handle != nullptr && handle->tag == tutti_comm::kLiveTag && handle->impl) [[likely]]
    return handle->impl.get();
  refuse_comm(handle, api);
  return nullptr;
}

}  // namespace tutti::capi
