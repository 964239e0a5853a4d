// A communicator whose init runs on a thread of its own, from tutti.h's draft
// tutti_comm_init_start until tutti_comm_init_wait collects it. Destroying it gives
// the init up and waits for its thread, which ends promptly once cancelled
// (runtime/rendezvous/init_cancel.h).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/comm/comm.h"
#include "runtime/rendezvous/init_cancel.h"
#include "tutti.h"

namespace tutti::capi {

struct PendingInit {
  rendezvous::InitCancel cancel;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable finished;
  // Under mutex, set once by the thread.
  bool done = false;
  std::unique_ptr<comm::Comm> result;
  tutti_status status = TUTTI_OK;
  std::string message;

  ~PendingInit() {
    cancel.cancel("the communicator was destroyed during its init (tutti_comm_destroy)");
    if (thread.joinable()) thread.join();
  }
};

}  // namespace tutti::capi
