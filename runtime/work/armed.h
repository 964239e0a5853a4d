// What a transport answers when asked to arm its wake-up (transport::Transport::arm),
// for the executor's thread, which then sleeps in it without holding it (executor.h).
// Here, below both, so that the executor's hook hands the transport's answer on as is.
#pragma once

namespace tutti::work {

enum class Armed {
  kArmed,        // the transport's wait now wakes on any arrival or completion, or an interrupt
  kBusy,         // there is something to progress already
  kUnsupported,  // the transport cannot be slept on so: sleep some other way
};

}  // namespace tutti::work
