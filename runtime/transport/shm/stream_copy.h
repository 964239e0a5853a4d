// Copies into a collective's receive buffer, and when they stream (operation/stream_store.h).
// When that buffer is large, they bypass the cache on the destination side: its lines
// are written without being read first (no read-for-ownership), and they do not push
// the next chunk's shared lines out of the cache.
#pragma once

#include <cstddef>
#include <cstring>

#include "runtime/operation/stream_store.h"

namespace tutti::transport::shm {

// From a receive buffer of this many bytes on, copies into it stream. Measured at 2
// ranks on this project's VM with its two vCPUs far apart (a cross-core round trip of
// 400-600 ns), plain copies were faster up to 32 MiB: all_gather of 4 MiB took 166-175
// us against 262-270 streaming, of 16 MiB 750-820 against 1080-1140, broadcast and
// all_reduce the same or a little faster; at 64 and 128 MiB the two were even. Past
// that, streaming keeps a copy from pushing the next chunk's shared lines out of the
// cache.
inline constexpr size_t kStreamFromBytes = size_t{64} << 20;

// The in-place forms (reading the peers' buffers in memory from tutti_mem_alloc) stream
// into results from this many bytes of result on: past it the result no longer stays
// in cache anyway, and nothing of the slots is left to push out. Measured at 2 ranks,
// vCPUs far apart: all_gather of 16 MiB took 500-545 us against 565-590 with plain
// stores (equal at 64 MiB), at 4 MiB 107-120 against 80-82; float32 all_reduce of 16
// MiB 750-780 against 910-940, of 64 MiB 3390-4160 against 4490-4760, but of 8 MiB
// 357-383 against 281-314.
inline constexpr size_t kStreamInPlaceFromBytes = size_t{16} << 20;

// Copies a piece of a receive buffer of `buffer_bytes` in all.
inline void copy_out(void* dst, const void* src, size_t bytes, size_t buffer_bytes) {
  if (buffer_bytes >= kStreamFromBytes) {
    copy_streaming(dst, src, bytes);
  } else {
    std::memcpy(dst, src, bytes);
  }
}

}  // namespace tutti::transport::shm
