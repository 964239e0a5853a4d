// Streaming stores: writes that send each cache line to memory without reading it
// first (no read-for-ownership) and without keeping it in the cache. Faster where what
// is written does not fit in the cache, or where another core reads it next; slower
// where the writer reads it again soon. The reduction kernels (reduce_op.h) and the
// shared-memory copies (transport/shm/stream_copy.h) use them.
#pragma once

#include <cstddef>

namespace tutti {

// Like memcpy, for non-overlapping buffers; the stores are ordered (sfence) before it
// returns.
void copy_streaming(void* dst, const void* src, size_t bytes);

// copy_streaming without the closing sfence, for a run of copies that one
// fence_streaming() orders: a fence after every few KiB would wait each time for the
// write-combining buffers to drain.
void stream_unfenced(void* dst, const void* src, size_t bytes);
void fence_streaming();

}  // namespace tutti
