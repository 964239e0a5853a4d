// A communicator's reusable scratch memory. Algorithms that need temporary space take
// it from here instead of allocating per operation: each slot grows to the largest
// size asked of it and is kept until the communicator is destroyed, so steady-state
// operations allocate nothing. One operation runs at a time per communicator, so the
// slots need no locking.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace tutti {

class Scratch {
 public:
  static constexpr int kSlots = 4;

  // At least `bytes` bytes, 64-byte aligned; valid until the next get() of the same
  // slot. Throws Error(kNoMemory) when the memory cannot be had.
  void* get(int slot, size_t bytes);
  // What the slots hold now, for the report of what a communicator allocates.
  size_t held_bytes() const;

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> buffers_[kSlots];
  size_t sizes_[kSlots] = {};
};

}  // namespace tutti
