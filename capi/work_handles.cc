#include "capi/work_handles.h"

#include <cstdint>
#include <mutex>
#include <vector>

#include "capi/guard.h"

namespace tutti::capi::work_handles {
namespace {

static_assert(sizeof(tutti_work*) == sizeof(uint64_t), "a handle packs a slot and its generation into 64 bits");

// A handle's bits: the slot's generation above, its index + 1 below (never NULL).
struct Parts {
  uint32_t index;
  uint32_t generation;
};

tutti_work* pack(uint32_t index, uint32_t generation) {
  return reinterpret_cast<tutti_work*>((uint64_t{generation} << 32) | (uint64_t{index} + 1));
}

Parts unpack(const tutti_work* handle) {
  const uint64_t bits = reinterpret_cast<uintptr_t>(handle);
  return Parts{static_cast<uint32_t>(bits) - 1, static_cast<uint32_t>(bits >> 32)};
}

struct Slot {
  std::shared_ptr<work::Work> operation;  // null while free
  uint32_t generation = 0;                // the live handle's; advanced on release
};

// Never destroyed: a thread may release a Work while the process exits.
struct Registry {
  std::mutex mutex;
  std::vector<Slot> slots;
  std::vector<uint32_t> free;  // released slots, reused first
};

Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
}

// The live slot a handle names, or nullptr; the registry's lock held.
Slot* live_slot(Registry& handles, const tutti_work* handle) {
  const Parts parts = unpack(handle);
  if (handle == nullptr || parts.index >= handles.slots.size()) return nullptr;
  Slot& slot = handles.slots[parts.index];
  return slot.operation && slot.generation == parts.generation ? &slot : nullptr;
}

void refuse(const tutti_work* handle, const char* api) {
  if (handle == nullptr) {
    invalid_argument(api, "work is NULL; pass the tutti_work* an operation returned");
  } else {
    invalid_argument(api,
                     "work is not a live tutti_work (already released?); wait on each work before releasing "
                     "it, and release it once");
  }
}

}  // namespace

tutti_work* add(std::shared_ptr<work::Work> operation) {
  Registry& handles = registry();
  std::lock_guard<std::mutex> lock(handles.mutex);
  uint32_t index;
  if (!handles.free.empty()) {
    index = handles.free.back();
    handles.free.pop_back();
  } else {
    // Index + 1 must fit 32 bits: 4 billion operations unreleased at once.
    if (handles.slots.size() >= UINT32_MAX - 1) fail(Status::kNoMemory, "too many unreleased tutti_work handles");
    index = static_cast<uint32_t>(handles.slots.size());
    handles.slots.emplace_back();
    handles.free.reserve(handles.slots.size());  // so that remove's push_back cannot throw
  }
  Slot& slot = handles.slots[index];
  slot.operation = std::move(operation);
  return pack(index, slot.generation);
}

std::shared_ptr<work::Work> find(const tutti_work* handle, const char* api) {
  {
    Registry& handles = registry();
    std::lock_guard<std::mutex> lock(handles.mutex);
    if (Slot* slot = live_slot(handles, handle)) return slot->operation;
  }
  refuse(handle, api);
  return nullptr;
}

bool remove(tutti_work* handle, const char* api) {
  std::shared_ptr<work::Work> operation;  // dropped after the lock
  {
    Registry& handles = registry();
    std::lock_guard<std::mutex> lock(handles.mutex);
    Slot* slot = live_slot(handles, handle);
    if (slot == nullptr) {
      refuse(handle, api);
      return false;
    }
    operation = std::move(slot->operation);
    ++slot->generation;
    handles.free.push_back(unpack(handle).index);
  }
  return true;
}

}  // namespace tutti::capi::work_handles
