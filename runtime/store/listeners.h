// The store's listening sockets, made to absorb a connect burst. The kernel caps one
// socket's accept queue at net.core.somaxconn (4096 here), and a SYN that finds the
// queue full is dropped and sent again only a second later: 10,000 ranks connecting at
// once lost 4,180 SYNs that way, and a second each. Sockets bound to one port with
// SO_REUSEPORT each have a queue of their own, and the kernel spreads new connections
// over them, so the store listens on as many as its max_connections needs.
//
// SO_REUSEPORT lets any socket of the same user join the port, which would let a
// second store on the same fixed port take half the first one's ranks. So the port is
// probed first with a plain socket, as one listener would be: a port that any socket
// holds (a tutti store included) is refused with EADDRINUSE, as before. Only two
// stores that start in the same microseconds on one fixed port could still share it.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <vector>

namespace tutti::store {

// How many listeners max_connections needs: one per somaxconn, 1 to 8.
size_t listeners_for(size_t max_connections);

// Binds count non-blocking sockets to address (port 0: one free port for all of
// them), ready for listen(). Returns 0 and the sockets in *fds, or a negative errno
// (UV_EADDRINUSE and friends on Linux) with none left open.
int bind_listeners(const sockaddr_storage& address, size_t count, std::vector<int>* fds);

}  // namespace tutti::store
