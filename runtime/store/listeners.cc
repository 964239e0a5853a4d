#include "runtime/store/listeners.h"

#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "runtime/store/socket_address.h"

namespace tutti::store {
namespace {

constexpr size_t kMaxListeners = 8;

size_t somaxconn() {
  std::ifstream file("/proc/sys/net/core/somaxconn");
  size_t value = 0;
  if (file >> value && value > 0) return value;
  return 4096;
}

socklen_t length_of(const sockaddr_storage& address) {
  return address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void set_port(sockaddr_storage* address, uint16_t port) {
  if (address->ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(address)->sin6_port = htons(port);
  } else {
    reinterpret_cast<sockaddr_in*>(address)->sin_port = htons(port);
  }
}

// A bound socket, or -errno. reuse_port: join the port's SO_REUSEPORT group.
int bound_socket(const sockaddr_storage& address, bool reuse_port) {
  int fd = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int on = 1;
  // As libuv's uv_tcp_bind does: a restarted store may take its port back from
  // connections still in TIME_WAIT.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (address.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  if ((reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) ||
      bind(fd, reinterpret_cast<const sockaddr*>(&address), length_of(address)) != 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  return fd;
}

}  // namespace

size_t listeners_for(size_t max_connections) {
  size_t queue = somaxconn();
  return std::clamp<size_t>((max_connections + queue - 1) / queue, 1, kMaxListeners);
}

int bind_listeners(const sockaddr_storage& address, size_t count, std::vector<int>* fds) {
  fds->clear();
  // The probe: refused where any socket holds the port, and the port 0 resolves to.
  int probe = bound_socket(address, false);
  if (probe < 0) return probe;
  sockaddr_storage chosen{};
  socklen_t length = sizeof(chosen);
  int rc = getsockname(probe, reinterpret_cast<sockaddr*>(&chosen), &length) == 0 ? 0 : -errno;
  close(probe);
  if (rc != 0) return rc;
  sockaddr_storage bind_to = address;
  set_port(&bind_to, socket_address_port(chosen));
  for (size_t i = 0; i < count; ++i) {
    int fd = count == 1 ? bound_socket(bind_to, false) : bound_socket(bind_to, true);
    if (fd < 0) {
      for (int open : *fds) close(open);
      fds->clear();
      return fd;
    }
    fds->push_back(fd);
  }
  return 0;
}

}  // namespace tutti::store
