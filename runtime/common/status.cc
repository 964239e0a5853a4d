#include "runtime/common/status.h"

namespace tutti {

const char* status_name(Status status) {
  switch (status) {
    case Status::kOk: return "TUTTI_OK";
    case Status::kInvalidArgument: return "TUTTI_ERR_INVALID_ARGUMENT";
    case Status::kTimeout: return "TUTTI_ERR_TIMEOUT";
    case Status::kPeerLost: return "TUTTI_ERR_PEER_LOST";
    case Status::kMismatch: return "TUTTI_ERR_MISMATCH";
    case Status::kAborted: return "TUTTI_ERR_ABORTED";
    case Status::kTransport: return "TUTTI_ERR_TRANSPORT";
    case Status::kUnsupported: return "TUTTI_ERR_UNSUPPORTED";
    case Status::kNoMemory: return "TUTTI_ERR_NO_MEMORY";
    case Status::kDenied: return "TUTTI_ERR_DENIED";
    case Status::kInternal: return "TUTTI_ERR_INTERNAL";
  }
  return "TUTTI_ERR_UNKNOWN";
}

}  // namespace tutti
