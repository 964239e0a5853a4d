// The runtime's status codes. They mirror TUTTI_STATUS_MAP in capi/include/tutti.h
// value for value (capi/ static_asserts it), so that no runtime file needs the C header.
#pragma once

#include <cstdint>

namespace tutti {

enum class Status : int32_t {
  kOk = 0,
  // Never an operation's status: tutti_work_wait's answer when its caller's own time
  // ran out first (capi/api_work.cc).
  kInProgress = 1,
  kInvalidArgument = -1,
  kTimeout = -2,
  kPeerLost = -3,
  kMismatch = -4,
  kAborted = -5,
  kTransport = -6,
  kUnsupported = -7,
  kNoMemory = -8,
  kDenied = -9,
  kInternal = -10,
};

// "TIMEOUT", "PEER_LOST": the status as tutti.h spells it after TUTTI_ERR_, for
// reports written by the runtime itself (capi/ has the full names and messages).
constexpr const char* status_word(Status status) {
  switch (status) {
    case Status::kOk: return "OK";
    case Status::kInProgress: return "INPROGRESS";
    case Status::kInvalidArgument: return "INVALID_ARGUMENT";
    case Status::kTimeout: return "TIMEOUT";
    case Status::kPeerLost: return "PEER_LOST";
    case Status::kMismatch: return "MISMATCH";
    case Status::kAborted: return "ABORTED";
    case Status::kTransport: return "TRANSPORT";
    case Status::kUnsupported: return "UNSUPPORTED";
    case Status::kNoMemory: return "NO_MEMORY";
    case Status::kDenied: return "DENIED";
    case Status::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // namespace tutti
