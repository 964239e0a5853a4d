#include "capi/work_handles.h"

#include <mutex>
#include <unordered_set>

#include "capi/guard.h"

namespace tutti::capi::work_handles {
namespace {

// Never destroyed: a thread may release a Work while the process exits.
struct Registry {
  std::mutex mutex;
  std::unordered_set<const tutti_work*> live;
};

Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
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
  auto handle = std::make_unique<tutti_work>();
  handle->impl = std::move(operation);
  Registry& handles = registry();
  std::lock_guard<std::mutex> lock(handles.mutex);
  handles.live.insert(handle.get());
  return handle.release();
}

std::shared_ptr<work::Work> find(const tutti_work* handle, const char* api) {
  {
    Registry& handles = registry();
    std::lock_guard<std::mutex> lock(handles.mutex);
    if (handle != nullptr && handles.live.count(handle) != 0) return handle->impl;
  }
  refuse(handle, api);
  return nullptr;
}

bool remove(tutti_work* handle, const char* api) {
  {
    Registry& handles = registry();
    std::lock_guard<std::mutex> lock(handles.mutex);
    if (handle == nullptr || handles.live.erase(handle) == 0) {
      refuse(handle, api);
      return false;
    }
  }
  delete handle;
  return true;
}

}  // namespace tutti::capi::work_handles
