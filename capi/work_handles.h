// The live tutti_work handles. Every entry point finds a handle's operation here,
// under one lock, before it reads the handle, so that tutti_work_release may race a
// wait on another thread (tutti.h): the wait that already found the operation holds
// it and ends with its status; one that comes after finds no handle and says so.
// A tag in the handle (as tutti_comm has) could not give that: the released handle's
// memory is gone by the time a racing wait reads the tag.
#pragma once

#include <memory>

#include "runtime/work/work.h"
#include "tutti.h"

struct tutti_work {
  std::shared_ptr<tutti::work::Work> impl;
};

namespace tutti::capi::work_handles {

// A new live handle for an operation.
tutti_work* add(std::shared_ptr<work::Work> operation);

// The operation behind handle, or nullptr (with the last error set, naming api) when
// handle is NULL or not live: never released, or released already.
std::shared_ptr<work::Work> find(const tutti_work* handle, const char* api);

// Ends handle; false (with the last error set) when it is not live.
bool remove(tutti_work* handle, const char* api);

}  // namespace tutti::capi::work_handles
