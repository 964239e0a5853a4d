// Seeing a same-host peer's process end, through a pidfd: at once, and without
// polling anything while nothing happens. UCX 1.13 alone is not enough over shared
// memory (measured here, sysv with MM_ERROR_HANDLING and a 1 s keepalive): its
// keepalive asks /proc whether the peer's pid still lives, so a dead peer that its
// parent has not reaped yet (a zombie) looks alive; and an endpoint with a rendezvous
// send outstanding was never reported in 8 s even once the peer was reaped. A pidfd
// turns readable the moment the process exits. Peers on other hosts are left to UCX,
// whose network transports see the broken connection themselves.
#pragma once

#include <sys/types.h>

#include <string>

namespace tutti::transport::ucx {

// "<boot id>/<pid namespace>": two processes with the same identity are on one host
// and see each other under the same pid. "" when it cannot be read; such a process
// watches no peer.
std::string host_identity();

// What watching a process gave: a pidfd, readable once the process has ended; or the
// news that it has ended already; or neither, where the kernel or a seccomp filter
// refuses pidfds (the peer is then left to UCX).
struct ProcessWatch {
  int fd = -1;
  bool ended = false;
};
ProcessWatch watch_process(pid_t pid);

}  // namespace tutti::transport::ucx
