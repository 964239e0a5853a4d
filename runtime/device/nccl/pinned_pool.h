// Pinned host memory for the staging path's asynchronous sends and receives, each of
// which holds its own block until it completes (several may be in flight at once, so
// they cannot share the one staging buffer of the blocking calls). Blocks go back to
// the pool when the last holder drops them and are reused by size, so that a loop of
// isend/irecv does not pay cudaHostAlloc (and cudaFreeHost, which synchronizes the
// device) per call.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device/nccl/cuda_api.h"

namespace tutti::device::nccl {

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  explicit PinnedPool(const CudaApi& cuda) : cuda_(cuda) {}
  // Frees the blocks in the pool; the blocks still held keep it alive until then.
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // A block of at least `bytes` (one byte at least), back in the pool once the last
  // copy of the pointer is dropped. Throws Error(kTransport) naming `what` where
  // cudaHostAlloc fails.
  std::shared_ptr<unsigned char> take(size_t bytes, const std::string& what);

 private:
  struct Block {
    unsigned char* data;
    size_t bytes;
  };
  void give_back(Block block);

  const CudaApi& cuda_;
  std::mutex mutex_;
  std::vector<Block> free_;  // guarded by mutex_
};

}  // namespace tutti::device::nccl
