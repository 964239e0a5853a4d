#include "runtime/comm/dump_signal.h"

#include <signal.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/comm/comm.h"
#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/settings.h"

namespace tutti::comm {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<const Comm*> comms;    // guarded by mutex
  std::shared_ptr<loop::Loop> loop;  // guarded by mutex; set while a handler is installed
  uv_signal_t* handle = nullptr;     // loop thread only
};

// Never destroyed: the loop's callbacks may use it until the process exits.
Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

// 0 when TUTTI_DUMP_SIGNAL is unset.
int configured_signal() {
  auto name = settings::text("TUTTI_DUMP_SIGNAL");
  if (!name) return 0;
  const char* text = name->c_str();
  if (strncasecmp(text, "SIG", 3) == 0) text += 3;
  if (strcasecmp(text, "USR1") == 0) return SIGUSR1;
  if (strcasecmp(text, "USR2") == 0) return SIGUSR2;
  fail(Status::kInvalidArgument,
       concat("TUTTI_DUMP_SIGNAL=\"", *name, "\" is not USR1 or USR2; set one of them, or unset it"));
}

void on_signal(uv_signal_t*, int) {
  Registry& r = registry();
  std::string text;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const Comm* comm : r.comms) text += comm->dump();
  }
  for (size_t written = 0; written < text.size();) {
    ssize_t n = ::write(STDERR_FILENO, text.data() + written, text.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
}

}  // namespace

void register_for_dump(const Comm* comm, const std::shared_ptr<loop::Loop>& loop, Deadline deadline) {
  int signum = configured_signal();
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.comms.push_back(comm);
    if (signum == 0 || r.loop) return;
    r.loop = loop;
  }
  // Installed before init returns, so that the signal never finds its default action
  // (which ends the process) once a communicator exists.
  loop->call(
      [signum, on = loop.get()] {
        Registry& on_loop = registry();
        on_loop.handle = new uv_signal_t;
        uv_signal_init(on->uv(), on_loop.handle);
        uv_signal_start(on_loop.handle, &on_signal, signum);
      },
      deadline);
}

void unregister_for_dump(const Comm* comm) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::erase(r.comms, comm);
  if (!r.comms.empty() || !r.loop) return;
  r.loop->post([] {
    Registry& on_loop = registry();
    uv_close(reinterpret_cast<uv_handle_t*>(on_loop.handle),
             [](uv_handle_t* handle) { delete reinterpret_cast<uv_signal_t*>(handle); });
    on_loop.handle = nullptr;
  });
  r.loop.reset();
}

}  // namespace tutti::comm
