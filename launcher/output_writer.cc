#include "launcher/output_writer.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/common/concat.h"

namespace tutti::launcher {

void OutputWriter::write(std::string_view data) {
  while (!broken_ && !data.empty()) {
    ssize_t written = ::write(fd_, data.data(), data.size());
    if (written >= 0) {
      data.remove_prefix(static_cast<size_t>(written));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      struct pollfd ready = {fd_, POLLOUT, 0};
      poll(&ready, 1, -1);
      continue;
    }
    broken_ = true;
    std::string line =
        concat("tutti launch: cannot write the ranks' output to ", fd_ == STDOUT_FILENO ? "stdout" : "stderr", ": ",
               std::strerror(errno), "; dropping the rest of it\n");
    ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
  }
}

}  // namespace tutti::launcher
