// The store's side door for clients on its own machine: beside its TCP port, a store
// (or relay) listens on a Unix socket in Linux's abstract namespace, named after the
// TCP address it listens on, and a client whose target is that address connects there
// instead. Same protocol, same handshake; only the kernel's path is shorter: a request
// over loopback TCP runs the whole TCP stack twice (send, then receive in the
// sender's softirq) plus ACKs and timers, and a Unix socket only queues the bytes and
// wakes the reader. A node's ranks reach its relay, and tutti launch's ranks its
// store, this way; PMIx's local server does the same.
//
// The name: "tutti-store:<ip>:<port>" (socket_address_text of the bound address).
// Abstract names live in the network namespace, so a client in another namespace (or
// on another machine) finds none and uses TCP, and one in the same namespace that
// finds the name has found the process that holds that very IP and port. A server
// bound to every address (0.0.0.0) has no name: its clients name one address.
//
// Abstract sockets have no file permissions, so anyone could take a name first. A
// client therefore connects only to a listener of its own user (SO_PEERCRED), who
// could read its memory anyway; anything else, and a listener whose queue is full,
// sends it to TCP. The job's secret is checked over either path.
//
// TUTTI_STORE_UNIX_SOCKET=off keeps both sides on TCP (e.g. to watch the traffic with
// tcpdump).
#pragma once

#include <sys/socket.h>

#include <string>

namespace tutti::store {

// Whether TUTTI_STORE_UNIX_SOCKET allows the side door (on, the default, or off);
// throws Error(kInvalidArgument) naming the variable for another value.
bool local_socket_enabled();

// A listening socket (non-blocking) named after tcp_address, or -errno. -EINVAL for a
// wildcard address, which has no name.
int listen_local(const sockaddr_storage& tcp_address, int backlog);

// A connected socket (non-blocking) to the local listener named after tcp_address, or
// -errno: -ECONNREFUSED where there is none, -EAGAIN where its queue is full, -EPERM
// where another user holds the name.
int connect_local(const sockaddr_storage& tcp_address);

// How a server names a client that came through the side door: "local pid 1234".
std::string local_peer_text(int fd);

}  // namespace tutti::store
