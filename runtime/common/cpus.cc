#include "runtime/common/cpus.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/common/log.h"

namespace tutti {

std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  return cpus;
}

int online_cpus() {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

int runnable_threads() {
  // "0.52 0.58 0.59 3/467 12345": the fourth field's first number.
  const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return -1;
  text[got] = '\0';
  int runnable = -1;
  if (std::sscanf(text, "%*s %*s %*s %d/", &runnable) != 1) return -1;
  return runnable;
}

int move_to_another_cpu(uint64_t choice) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  const int here = sched_getcpu();
  const int others = CPU_COUNT(&allowed) - (here >= 0 && CPU_ISSET(here, &allowed) ? 1 : 0);
  if (others <= 0) return -1;
  int skip = static_cast<int>(choice % static_cast<uint64_t>(others));
  int target = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && target < 0; ++cpu) {
    if (cpu == here || !CPU_ISSET(cpu, &allowed)) continue;
    if (skip-- == 0) target = cpu;
  }
  cpu_set_t there;
  CPU_ZERO(&there);
  CPU_SET(target, &there);
  if (sched_setaffinity(0, sizeof there, &there) != 0) return -1;
  // The set that was just read, with the CPU just accepted in it: only a cpuset changed
  // in between could refuse it.
  if (sched_setaffinity(0, sizeof allowed, &allowed) != 0) {
    log::warn("could not give a waiting thread its CPUs back after moving it to CPU ", target, " (",
              std::strerror(errno), "); it stays on that CPU alone");
  }
  return target;
}

}  // namespace tutti
