// Kills what is left of the ranks' process groups if the launcher dies without
// cleaning up (SIGKILL, OOM killer). PR_SET_PDEATHSIG takes care of the ranks
// themselves, but not of their children (a shell's commands, a Python program's
// workers): those would be left running, holding GPUs and ports.
//
// It is a small helper process, forked before the launcher starts any thread, that
// learns each rank's process group through a pipe and waits for the pipe to close. A
// launcher that ends normally says so first, and the helper then just exits.
#pragma once

#include <sys/types.h>

#include <string>

namespace tutti::launcher {

class OrphanGuard {
 public:
  OrphanGuard() = default;
  // Tells the helper the job ended normally, so that it kills nothing.
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  // Forks the helper. Call while the process has one thread. Returns "" or the reason
  // it could not (the job can run without it, with less protection).
  std::string start();
  // The helper will SIGKILL process group pgid if the launcher dies.
  void watch(pid_t pgid);
  pid_t helper_pid() const { return helper_; }

 private:
  int pipe_ = -1;  // write end, O_CLOEXEC so that ranks do not inherit it
  pid_t helper_ = 0;
};

}  // namespace tutti::launcher
