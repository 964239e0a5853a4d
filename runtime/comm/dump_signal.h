// The dump signal (TUTTI_DUMP_SIGNAL=USR1 or USR2): on it, the event loop writes the
// recent operations of every live communicator of this process to stderr, as
// tutti_comm_dump does for one, so that a hung job can be asked where each rank is
// (`kill -USR1 <pid>`, or `pkill -USR1 -f my_program` for all ranks of a node).
// libuv turns the signal into a callback on the loop thread, so nothing runs in the
// signal handler itself.
#pragma once

#include <memory>

#include "runtime/common/deadline.h"
#include "runtime/loop/loop.h"

namespace tutti::comm {

class Comm;

// Every live communicator registers; the first installs the handler when the setting
// asks for one, the last removes it. Throws Error(kInvalidArgument) for a setting that
// names another signal.
void register_for_dump(const Comm* comm, const std::shared_ptr<loop::Loop>& loop, Deadline deadline);
void unregister_for_dump(const Comm* comm);

}  // namespace tutti::comm
