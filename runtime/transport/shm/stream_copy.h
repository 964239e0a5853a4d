// Copies that bypass the cache on the destination side, for copying a collective's
// result out of shared memory into a receive buffer far larger than the caches: the
// destination's lines are written without being read first (no read-for-ownership),
// and do not push the next chunk's shared lines out of the cache.
#pragma once

#include <cstddef>

namespace tutti::transport::shm {

// Like memcpy, for non-overlapping buffers; the stores are ordered (sfence) before it
// returns.
void copy_streaming(void* dst, const void* src, size_t bytes);

}  // namespace tutti::transport::shm
