// How many bytes of each buffer a call uses on one rank: what the device path
// classifies (host or device memory) and what the staging path copies.
#pragma once

#include <cstddef>

#include "runtime/operation/call.h"

namespace tutti::device {

struct BufferSpans {
  size_t send_bytes = 0;  // 0: this rank does not read send
  size_t recv_bytes = 0;  // 0: this rank does not write recv
};

// For a call that passed validate.
BufferSpans spans_of(const Call& call, int rank, int size);

}  // namespace tutti::device
