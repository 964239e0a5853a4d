#include "runtime/device/nccl/pinned_pool.h"

#include <algorithm>

#include "runtime/common/concat.h"

namespace tutti::device::nccl {
namespace {

// The most blocks the pool keeps; a program with more sends and receives in flight
// allocates the rest and frees them as they come back.
constexpr size_t kKeptBlocks = 16;

}  // namespace

PinnedPool::~PinnedPool() {
  for (const Block& block : free_) cuda_.FreeHost(block.data);
}

std::shared_ptr<unsigned char> PinnedPool::take(size_t bytes, const std::string& what) {
  bytes = std::max<size_t>(bytes, 1);
  Block block{nullptr, 0};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest block that fits.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
    }
    if (best != free_.end()) {
      block = *best;
      free_.erase(best);
    }
  }
  if (block.data == nullptr) {
    void* data = nullptr;
    cuda_.check(cuda_.HostAlloc(&data, bytes, cudaHostAllocPortable), "cudaHostAlloc",
                concat("allocating ", bytes, " bytes of pinned host memory for ", what));
    block = Block{static_cast<unsigned char*>(data), bytes};
  }
  auto pool = shared_from_this();
  return std::shared_ptr<unsigned char>(block.data, [pool, block](unsigned char*) { pool->give_back(block); });
}

void PinnedPool::give_back(Block block) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kKeptBlocks) {
      free_.push_back(block);
      return;
    }
  }
  cuda_.FreeHost(block.data);
}

}  // namespace tutti::device::nccl
