#include "runtime/collectives/op_trace.h"

#include "runtime/operation/dtype.h"
#include "runtime/trace/trace.h"

namespace tutti::collectives {
namespace {

// A send's or receive's begin or end; its id, unique in the process, is what the two
// match on.
trace::Event p2p_event(trace::Phase phase, int track, Kind kind, uint64_t number) {
  trace::Event event;
  event.phase = phase;
  event.stamp = trace::stamp();
  event.track = static_cast<int16_t>(track);
  event.name = kind_name(kind);
  event.cat = "p2p";
  event.id = (static_cast<int64_t>(track) << 40) | static_cast<int64_t>(number);
  return event;
}

}  // namespace

void trace_collective_begin(int track, const Call& call, uint32_t seq) {
  trace::Event event;
  event.phase = trace::Phase::kBegin;
  event.stamp = trace::stamp();
  event.track = static_cast<int16_t>(track);
  event.name = kind_name(call.kind);
  event.cat = "collective";
  event.seq = seq;
  if (call.kind != Kind::kBarrier) {
    const Dtype dtype = static_cast<Dtype>(call.dtype);
    event.dtype = dtype_name(dtype);
    event.count = static_cast<int64_t>(call.count);
    event.bytes = static_cast<int64_t>(call.count * dtype_size(dtype));
  }
  if (is_reducing(call.kind)) event.op = reduce_op_name(static_cast<ReduceOp>(call.op));
  if (has_root(call.kind)) event.root = call.root;
  trace::record(event);
}

void trace_collective_end(int track, Status status, const char* algorithm, const char* transport,
                          const std::string& error) {
  trace::Event event;
  event.phase = trace::Phase::kEnd;
  event.stamp = trace::stamp();
  event.track = static_cast<int16_t>(track);
  event.cat = "collective";
  event.algorithm = algorithm;
  event.transport = transport;
  event.ended(status);
  trace::record(event, error);
}

void trace_p2p_begin(int track, const Call& call, uint64_t number) {
  trace::Event event = p2p_event(trace::Phase::kAsyncBegin, track, call.kind, number);
  event.peer = call.root;
  event.tag = call.tag;
  event.bytes = static_cast<int64_t>(call.count * dtype_size(static_cast<Dtype>(call.dtype)));
  trace::record(event);
}

void trace_p2p_end(int track, Kind kind, uint64_t number, Status status, const std::string& error) {
  trace::Event event = p2p_event(trace::Phase::kAsyncEnd, track, kind, number);
  event.ended(status);
  trace::record(event, error);
}

}  // namespace tutti::collectives
