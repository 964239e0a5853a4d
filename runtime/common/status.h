// The runtime's status codes. They mirror TUTTI_STATUS_MAP in capi/include/tutti.h
// value for value (capi/ static_asserts it), so that no runtime file needs the C header.
#pragma once

#include <cstdint>

namespace tutti {

enum class Status : int32_t {
  kOk = 0,
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

}  // namespace tutti
