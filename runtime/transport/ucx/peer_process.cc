#include "runtime/transport/ucx/peer_process.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/common/concat.h"
#include "runtime/common/identity.h"
#include "runtime/common/log.h"

namespace tutti::transport::ucx {

std::string host_identity() {
  // The boot id names this kernel, so hosts (and reboots) differ; containers share
  // it, so the pid namespace's inode tells apart those that number processes apart.
  const std::string boot_id = kernel_boot_id();
  struct stat pid_namespace {};
  if (boot_id.empty() || ::stat("/proc/self/ns/pid", &pid_namespace) != 0) return "";
  return concat(boot_id, "/", pid_namespace.st_dev, ":", pid_namespace.st_ino);
}

ProcessWatch watch_process(pid_t pid) {
  ProcessWatch watch;
  // The raw system call: glibc 2.36's <sys/pidfd.h> lacks extern "C", so its wrapper
  // cannot be linked from C++.
  watch.fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (watch.fd >= 0) return watch;
  if (errno == ESRCH) {
    watch.ended = true;
  } else {
    log::debug("ucx: cannot watch process ", pid, " through a pidfd (", std::strerror(errno),
               "); UCX alone will notice if it ends");
  }
  return watch;
}

}  // namespace tutti::transport::ucx
