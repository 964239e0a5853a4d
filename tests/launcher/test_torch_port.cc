// HeldPort: the port tutti launch holds for torch's store (MASTER_PORT).
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "launcher/torch_port.h"

using tutti::launcher::HeldPort;

namespace {

// Binds 127.0.0.1:port, with SO_REUSEADDR when reuse (as torch's TCPStore binds),
// and listens when listen_too; the socket, or -1.
int bind_port(uint16_t port, bool reuse, bool listen_too) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  cr_assert(fd >= 0);
  const int on = 1;
  if (reuse) cr_assert(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || (listen_too && ::listen(fd, 4) != 0)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Test(torch_port, is_below_the_ephemeral_range) {
  HeldPort held = HeldPort::for_torch_store();
  cr_assert(held.port() >= 20000 && held.port() < 32768, "port %u", held.port());
}

Test(torch_port, keeps_other_choosers_off_but_lets_torch_listen) {
  HeldPort held = HeldPort::for_torch_store();
  cr_assert(held.port() != 0);
  // Another launcher's or a test's probe: a bind without SO_REUSEADDR.
  cr_assert(bind_port(held.port(), false, false) < 0, "port %u was not held", held.port());
  // Another launcher, choosing meanwhile, gets another port.
  HeldPort other = HeldPort::for_torch_store();
  cr_assert(other.port() != 0 && other.port() != held.port());
  // Rank 0's TCPStore binds with SO_REUSEADDR and listens.
  int store = bind_port(held.port(), true, true);
  cr_assert(store >= 0, "torch's store could not listen on the held port %u", held.port());
  // And a second store cannot listen there too.
  cr_assert(bind_port(held.port(), true, true) < 0);
  ::close(store);
}

Test(torch_port, is_given_back_with_the_job) {
  uint16_t port;
  {
    HeldPort held = HeldPort::for_torch_store();
    port = held.port();
    HeldPort moved = std::move(held);
    cr_assert(held.port() == 0 && moved.port() == port);
  }
  int fd = bind_port(port, false, false);
  cr_assert(fd >= 0, "port %u still held after the HeldPort was destroyed", port);
  ::close(fd);
}
