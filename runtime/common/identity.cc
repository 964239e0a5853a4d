#include "runtime/common/identity.h"

#include <unistd.h>

#include <climits>

#include "runtime/common/concat.h"

namespace tutti {

std::string hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string process_identity() { return concat(hostname(), ":", getpid()); }

}  // namespace tutti
