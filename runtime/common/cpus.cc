#include "runtime/common/cpus.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/common/concat.h"
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

std::vector<int> last_level_cache_cpus(int cpu) {
  // The index of the highest level lists the CPUs sharing it, as "0-3,8-11".
  const std::string caches = concat("/sys/devices/system/cpu/cpu", cpu, "/cache/");
  int top_level = 0;
  std::string list;
  for (int index = 0;; ++index) {
    std::ifstream level_file(concat(caches, "index", index, "/level"));
    int level = 0;
    if (!(level_file >> level)) break;
    std::ifstream list_file(concat(caches, "index", index, "/shared_cpu_list"));
    std::string text;
    if (level > top_level && std::getline(list_file, text)) {
      top_level = level;
      list = text;
    }
  }
  std::vector<int> cpus;
  std::istringstream ranges(list);
  for (std::string range; std::getline(ranges, range, ',');) {
    int first = 0, last = 0;
    char dash = 0;
    std::istringstream parts(range);
    if (!(parts >> first)) return {};
    if (!(parts >> dash >> last)) last = first;
    for (int c = first; c <= last; ++c) cpus.push_back(c);
  }
  return cpus;
}

int move_to_another_cpu(uint64_t choice) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  const int here = sched_getcpu();
  std::vector<int> others;
  for (int cpu : last_level_cache_cpus(here)) {
    if (cpu != here && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) others.push_back(cpu);
  }
  if (others.empty()) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (cpu != here && CPU_ISSET(cpu, &allowed)) others.push_back(cpu);
    }
  }
  if (others.empty()) return -1;
  const int target = others[choice % others.size()];
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
