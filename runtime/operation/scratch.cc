#include "runtime/operation/scratch.h"

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti {

void* Scratch::get(int slot, size_t bytes) {
  if (slot < 0 || slot >= kSlots) fail(Status::kInternal, concat("scratch slot ", slot, " out of range"));
  if (bytes <= sizes_[slot] && buffers_[slot]) return buffers_[slot].get();
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* fresh = std::aligned_alloc(64, rounded);
  if (fresh == nullptr) {
    fail(Status::kNoMemory, concat("cannot allocate ", rounded, " bytes of scratch memory for a collective"));
  }
  buffers_[slot].reset(fresh);
  sizes_[slot] = rounded;
  return fresh;
}

size_t Scratch::held_bytes() const {
  size_t total = 0;
  for (size_t size : sizes_) total += size;
  return total;
}

}  // namespace tutti
