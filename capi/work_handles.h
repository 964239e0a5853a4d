// The live tutti_work handles. Every entry point finds a handle's operation here,
// under one lock, before it acts on it, so that tutti_work_release may race a wait on
// another thread (tutti.h): the wait that already found the operation holds it and
// ends with its status; one that comes after finds no handle and says so.
//
// A handle is not an address but a slot's number and the slot's generation, packed
// into the pointer's bits: a slot is reused once its handle is released, with the
// next generation, so a released handle, or any other value, is refused and never
// read through. (A handle that was memory, with a tag inside as tutti_comm has, could
// not give that: the released handle's memory is gone by the time a racing wait reads
// the tag. Handles of allocated memory kept in a hash set cost two allocations and a
// hash per operation: an 8-byte exchange with a work took 4122 instructions a call on
// its receiving rank, 3777 without.)
#pragma once

#include <memory>

#include "runtime/work/work.h"
#include "tutti.h"

namespace tutti::capi::work_handles {

// A new live handle for an operation.
tutti_work* add(std::shared_ptr<work::Work> operation);

// The operation behind handle, or nullptr (with the last error set, naming api) when
// handle is NULL or not live: never handed out, or released already.
std::shared_ptr<work::Work> find(const tutti_work* handle, const char* api);

// Ends handle; false (with the last error set) when it is not live.
bool remove(tutti_work* handle, const char* api);

}  // namespace tutti::capi::work_handles
