#include "runtime/store/socket_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>
#include <string>

#include "runtime/common/concat.h"

namespace tutti::store {

std::string resolve_socket_address(const std::string& host, uint16_t port, bool passive, sockaddr_storage* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return concat("the host does not resolve (", gai_strerror(rc), ")");
  // IPv4 first: a name that has both usually means the same machine, and a store that
  // listens on IPv4 only is the common case.
  const addrinfo* pick = nullptr;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
    if (pick == nullptr && a->ai_family == AF_INET6) pick = a;
  }
  std::string why;
  if (pick == nullptr || pick->ai_addrlen > sizeof(sockaddr_storage)) {
    why = "the host has no IPv4 or IPv6 address";
  } else {
    std::memset(out, 0, sizeof(*out));
    std::memcpy(out, pick->ai_addr, pick->ai_addrlen);
  }
  freeaddrinfo(found);
  return why;
}

std::string socket_address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    return concat(text, ":", ntohs(in->sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return concat("[", text, "]:", ntohs(in6->sin6_port));
  }
  return "an address of an unknown family";
}

uint16_t socket_address_port(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return 0;
}

}  // namespace tutti::store
