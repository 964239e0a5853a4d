#include "runtime/rendezvous/file_method.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::rendezvous {
namespace {

constexpr const char* kMagic = "tutti-store";
constexpr int kFormat = 1;

bool read_address(const std::string& path, std::string* host, uint16_t* port) {
  std::ifstream file(path);
  std::string magic;
  int format = 0;
  unsigned number = 0;
  if (!(file >> magic >> format >> *host >> number)) return false;
  if (magic != kMagic || format != kFormat || number == 0 || number > 65535) return false;
  *port = static_cast<uint16_t>(number);
  return true;
}

}  // namespace

void publish_store_address(const std::string& path, const std::string& host, uint16_t port) {
  std::string temporary = concat(path, ".tmp.", getpid());
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << kMagic << " " << kFormat << " " << host << " " << port << "\n";
    if (!file.flush()) {
      fail(Status::kTransport, concat("tutti_comm_init: cannot write the rendezvous file ", temporary, ": ",
                                      std::strerror(errno), "; use a path in a folder every rank can write"));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(temporary.c_str());
    fail(Status::kTransport, concat("tutti_comm_init: cannot create the rendezvous file ", path, ": ",
                                    std::strerror(error), "; use a path in a folder every rank can write"));
  }
}

std::unique_ptr<store::Client> connect_through_file(const std::shared_ptr<loop::Loop>& loop, const std::string& path,
                                                    Deadline deadline, const std::string& secret, std::string* host,
                                                    uint16_t* port, const std::function<bool()>& cancelled) {
  int64_t pause_ms = 5;
  std::string last_reason = "the file does not exist yet";
  for (;;) {
    if (cancelled && cancelled()) {
      fail(Status::kAborted, concat("waiting at the rendezvous file ", path, " was given up (the init was aborted)"));
    }
    if (read_address(path, host, port)) {
      // A short try: a stale file's store refuses at once, and rank 0 may rewrite
      // the file meanwhile.
      auto attempt = Deadline::after_ms(std::min<int64_t>(1000, deadline.remaining_ms()));
      try {
        return store::Client::connect(loop, *host, *port, attempt, secret, cancelled);
      } catch (const Error& error) {
        if (error.status() != Status::kTransport && error.status() != Status::kTimeout &&
            error.status() != Status::kDenied) {
          throw;
        }
        last_reason = error.what();
      }
    }
    if (deadline.expired()) {
      fail(Status::kTimeout, concat("tutti_comm_init: timed out at the rendezvous file ", path, " (", last_reason,
                                    "); is rank 0 running with the same file:// path, on a file system every "
                                    "rank sees?"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(pause_ms, deadline.remaining_ms())));
    pause_ms = std::min<int64_t>(pause_ms * 2, 200);
  }
}

}  // namespace tutti::rendezvous
