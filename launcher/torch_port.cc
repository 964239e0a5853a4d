#include "launcher/torch_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <random>
#include <utility>

namespace tutti::launcher {
namespace {

// A socket bound to port (0: any) on loopback, without SO_REUSEADDR, so that it fails
// where anything has bound the port; -1 if it cannot be had.
int bind_loopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  return ntohs(address.sin_port);
}

}  // namespace

HeldPort HeldPort::for_torch_store() {
  std::mt19937 random(static_cast<unsigned>(getpid()) ^ static_cast<unsigned>(time(nullptr)));
  std::uniform_int_distribution<int> below_ephemeral(20000, 32767);
  int fd = -1;
  for (int tries = 0; tries < 100 && fd < 0; ++tries) {
    fd = bind_loopback(static_cast<uint16_t>(below_ephemeral(random)));
  }
  if (fd < 0) fd = bind_loopback(0);
  HeldPort held;
  if (fd < 0) return held;
  const int on = 1;
  const uint16_t port = bound_port(fd);
  if (port == 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    ::close(fd);
    return held;
  }
  held.fd_ = fd;
  held.port_ = port;
  return held;
}

HeldPort::~HeldPort() {
  if (fd_ >= 0) ::close(fd_);
}

HeldPort::HeldPort(HeldPort&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(std::exchange(other.port_, 0)) {}

HeldPort& HeldPort::operator=(HeldPort&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

}  // namespace tutti::launcher
