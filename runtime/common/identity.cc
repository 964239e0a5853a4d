#include "runtime/common/identity.h"

#include <unistd.h>

#include <climits>
#include <fstream>

#include "runtime/common/concat.h"

namespace tutti {

std::string hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string process_identity() { return concat(hostname(), ":", getpid()); }

std::string kernel_boot_id() {
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  return boot_id;
}

}  // namespace tutti
