#include "launcher/orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/common/concat.h"

namespace tutti::launcher {
namespace {

constexpr int32_t kJobEnded = -1;

bool read_full(int fd, void* data, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, static_cast<char*>(data) + got, size - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0 || errno != EINTR) {
      return false;
    }
  }
  return true;
}

[[noreturn]] void run_helper(int read_fd) {
  // Signals meant for the launcher (a terminal's Ctrl-C reaches its whole group) must
  // not end the helper: it ends when the launcher does.
  prctl(PR_SET_NAME, "tutti-guard");
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE}) signal(sig, SIG_IGN);
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    // Holding the launcher's stdout would keep a reader of it waiting for end of file.
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    close(null_fd);
  }
  std::vector<pid_t> groups;
  int32_t value = 0;
  while (read_full(read_fd, &value, sizeof value)) {
    if (value == kJobEnded) _exit(0);
    groups.push_back(static_cast<pid_t>(value));
  }
  // End of file without kJobEnded: the launcher died.
  int killed = 0;
  for (pid_t group : groups) killed += kill(-group, SIGKILL) == 0 ? 1 : 0;
  if (killed > 0) {
    std::string line = concat("tutti launch: the launcher died; killed what was left of ", killed,
                              " rank process group", killed == 1 ? "" : "s", "\n");
    ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
  }
  _exit(0);
}

}  // namespace

std::string OrphanGuard::start() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return concat("pipe: ", std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    int error = errno;
    close(fds[0]);
    close(fds[1]);
    return concat("fork: ", std::strerror(error));
  }
  if (pid == 0) {
    close(fds[1]);
    run_helper(fds[0]);
  }
  close(fds[0]);
  pipe_ = fds[1];
  helper_ = pid;
  return "";
}

void OrphanGuard::watch(pid_t pgid) {
  if (pipe_ < 0) return;
  int32_t value = static_cast<int32_t>(pgid);
  // 4 bytes are written whole to a pipe; the helper reads as fast as ranks start.
  while (write(pipe_, &value, sizeof value) < 0 && errno == EINTR) {
  }
}

OrphanGuard::~OrphanGuard() {
  if (pipe_ < 0) return;
  int32_t value = kJobEnded;
  while (write(pipe_, &value, sizeof value) < 0 && errno == EINTR) {
  }
  close(pipe_);
  int status;
  while (waitpid(helper_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace tutti::launcher
