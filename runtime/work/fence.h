// The GPU side of an operation that completes on a CUDA stream: the event its Work
// completes on. Declared here, without CUDA types, so that Work and the C API can wait
// on a device operation while only runtime/device/nccl sees CUDA.
#pragma once

namespace tutti::work {

class Fence {
 public:
  virtual ~Fence() = default;
  // Whether the GPU has passed the event (false once its communicator was aborted, so
  // that an aborted operation is never taken for a finished one). Any thread.
  virtual bool reached() = 0;
  // Makes `stream` (a cudaStream_t) wait for the event without blocking the host.
  // Throws Error. Any thread.
  virtual void make_stream_wait(void* stream) = 0;
};

}  // namespace tutti::work
