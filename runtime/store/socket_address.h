// Turning host names into socket addresses and back, for the store's server and client.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace tutti::store {

// Resolves host:port into *out, preferring IPv4. passive: an empty host means every
// local address (for listening). Returns "" on success, else why it failed.
std::string resolve_socket_address(const std::string& host, uint16_t port, bool passive, sockaddr_storage* out);

// "10.0.0.1:29500" or "[::1]:29500".
std::string socket_address_text(const sockaddr_storage& address);
uint16_t socket_address_port(const sockaddr_storage& address);

}  // namespace tutti::store
