// A communicator's operations in the trace (trace/trace.h): each collective as a span
// on the communicator's track, with what the user asked (kind, sequence number, bytes,
// dtype, op, root) and how it ran (algorithm, transport, status); each send and
// receive as an asynchronous span, since several may be in flight at once. Called only
// when trace::on().
#pragma once

#include <cstdint>
#include <string>

#include "runtime/common/status.h"
#include "runtime/operation/call.h"

namespace tutti::collectives {

void trace_collective_begin(int track, const Call& call, uint32_t seq);
// algorithm and transport: static strings, or nullptr when the collective failed
// before it chose them.
void trace_collective_end(int track, Status status, const char* algorithm, const char* transport,
                          const std::string& error);

// number: the communicator's count of sends and receives, which tells them apart.
void trace_p2p_begin(int track, const Call& call, uint64_t number);
void trace_p2p_end(int track, Kind kind, uint64_t number, Status status, const std::string& error);

}  // namespace tutti::collectives
