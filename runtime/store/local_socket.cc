#include "runtime/store/local_socket.h"

#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"
#include "runtime/common/settings.h"
#include "runtime/store/socket_address.h"

namespace tutti::store {
namespace {

bool is_wildcard(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&address)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (address.ss_family == AF_INET6) {
    const in6_addr& ip = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr;
    return std::memcmp(&ip, &in6addr_any, sizeof(ip)) == 0;
  }
  return true;  // no address to name
}

// The abstract address (a leading NUL, no terminating one) and its length.
socklen_t abstract_address(const sockaddr_storage& tcp_address, sockaddr_un* out) {
  std::memset(out, 0, sizeof(*out));
  out->sun_family = AF_UNIX;
  const std::string name = "tutti-store:" + socket_address_text(tcp_address);
  const size_t length = std::min(name.size(), sizeof(out->sun_path) - 1);
  std::memcpy(out->sun_path + 1, name.data(), length);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
}

int unix_socket() { return socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }

}  // namespace

bool local_socket_enabled() {
  auto setting = settings::text("TUTTI_STORE_UNIX_SOCKET");
  if (!setting || *setting == "on") return true;
  if (*setting == "off") return false;
  fail(Status::kInvalidArgument,
       concat("TUTTI_STORE_UNIX_SOCKET=\"", *setting, "\" is not on or off (on, the default: clients on the store's ",
              "machine reach it through a Unix socket)"));
}

int listen_local(const sockaddr_storage& tcp_address, int backlog) {
  if (is_wildcard(tcp_address)) return -EINVAL;
  sockaddr_un address{};
  socklen_t length = abstract_address(tcp_address, &address);
  int fd = unix_socket();
  if (fd < 0) return -errno;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0 || listen(fd, backlog) != 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  return fd;
}

int connect_local(const sockaddr_storage& tcp_address) {
  if (is_wildcard(tcp_address)) return -EINVAL;
  sockaddr_un address{};
  socklen_t length = abstract_address(tcp_address, &address);
  int fd = unix_socket();
  if (fd < 0) return -errno;
  // A Unix socket connects at once, or not at all (EAGAIN: the queue is full).
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  ucred listener{};
  socklen_t size = sizeof(listener);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &listener, &size) != 0 || listener.uid != geteuid()) {
    close(fd);
    return -EPERM;
  }
  return fd;
}

std::string local_peer_text(int fd) {
  ucred peer{};
  socklen_t size = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0) return "a local process";
  return concat("local pid ", peer.pid);
}

}  // namespace tutti::store
