// The process's UCP context, shared by every communicator's worker. UCP discovers
// transports and opens memory domains per context, which is slow (tens of ms) and
// gives the same answer for every communicator, so one context serves them all and
// each communicator only adds a worker of its own (worker_transport.h).
//
// What tutti changes from UCX's defaults, for this context only (never through the
// process environment), and only where the user has not set the variable:
//   MM_ERROR_HANDLING=y     UCX 1.13 hides its shared-memory transports (sysv, posix)
//                           from endpoints that ask to be told of peer failure; with
//                           this they advertise it, so same-host peers talk through
//                           shared memory instead of TCP loopback (0.8 us and 12 GB/s
//                           instead of 8.4 us and under 5 GB/s between two processes).
//   TLS=^sysv               where UCX_TLS is not set (UCX's all): sysv and posix are
//                           one transport over two kinds of shared memory, and UCX
//                           gives an endpoint one of them, but every worker set both
//                           up (3.3 of a worker's 10.7 ms of creation CPU here, on a
//                           VM where each first touch of a page costs microseconds).
//                           posix stays: it maps /dev/shm, as tutti's own shared
//                           memory does, so that where one works so does the other.
//   MM_RX_BUFS_GROW=65      the shared-memory transport a worker opens sets up its
//                           receive buffers, 8 KiB each, this many at a time; UCX's
//                           512 made it map and touch 4 MiB in every worker's creation
//                           (a worker per communicator). Its FIFO takes 64 and one is
//                           spare (mm_iface.c), 65 at once; more come, 65 at a time,
//                           only as received messages are held. 65 instead of 128 took
//                           a worker's creation from 7.4 to 5.8 ms of CPU here.
//   tcp's TX_SEG_SIZE=64K   (UCX_TCP_TX_SEG_SIZE, UCX_TCP_RX_SEG_SIZE) UCX copies
//   and RX_SEG_SIZE=256K    messages up to 8 KiB into its TCP send segments and reads
//                           64 KiB at a time by default. Endpoints that ask to be told
//                           of peer failure get no zero-copy rendezvous over TCP in UCX
//                           1.13 (its memory domain cannot invalidate keys), so large
//                           messages go as active-message fragments of those sizes.
//                           Larger segments made 2-rank all_reduce between emulated
//                           nodes 1.1-1.9x faster from 32 KiB to 8 MiB, small messages
//                           unchanged (docs/benchmarks.md).
//   cma's MEMORY_INVALIDATE=y  (UCX_CMA_MEMORY_INVALIDATE) UCX 1.13 gives endpoints that
//                           ask to be told of peer failure no zero-copy rendezvous
//                           through a memory domain that cannot invalidate what a
//                           peer may still read. cma's says it can when told to,
//                           though its invalidation does nothing (UCX's help text
//                           says so). Without it, same-host messages past the eager
//                           size went through UCX's shared-memory FIFO, copied in
//                           and out in fragments: a 256 KiB broadcast between
//                           emulated nodes took 37 us, Open MPI (whose endpoints ask
//                           for no failure reports) 13; with it, 14-16. The case
//                           that leaves open is one tutti's own peer reads
//                           (group_peer_reads.cc) already accept: a peer reads a
//                           send buffer while its owner gives up on the call (an
//                           abort, a timeout) and reuses it. A failed peer on one
//                           host is a process that ended, which reads nothing. Only
//                           where cma will open: UCX_TLS lets it in, and
//                           cma_permitted() (what its memory domain checks).
//   RNDV_THRESH=128K        messages up to 128 KiB go eagerly with cma, 256 KiB
//   or 256K                 without, as Open MPI's blocking sends do (UCX gives
//                           ucp_tag_send_nbr its RNDV_SEND_NBR_THRESH, 256 KiB, where
//                           tutti's nonblocking sends got UCX's computed threshold, 8
//                           KiB over shared memory): without cma, a rendezvous
//                           handshake made 16-64 KiB messages between emulated nodes
//                           over UCX's shared memory 1.5-2x slower than Open MPI's;
//                           with cma, 64 KiB messages still took 1.5x eagerly's time
//                           and 128 KiB ones 0.7x (docs/benchmarks.md). Over TCP the
//                           two were level with UCX's own threshold.
//   KEEPALIVE_INTERVAL=1s   UCX checks the peers of wired-up endpoints every second
//                           instead of every 20 s; this is what notices a peer whose
//                           host vanished without closing its connections (same-host
//                           peers are watched through pidfds, peer_process.h).
// And for the whole process, where the machine has no RDMA device (rdma_devices_present)
// and the user did not set UCX_MODULES: MODULES=^ib,rdmacm. UCX's InfiniBand module
// links libibverbs, which on its first device query loads every provider library it
// knows of (17 on Debian 12) to find none; that was a fifth of a rank's init CPU
// (docs/benchmarks.md). A process has one list of modules, and UCX reads it once, at
// its first ucp_init; other UCX users in the process would find no RDMA device either.
// The mm, cma and tcp settings only where UCX_TLS lets those transports in: UCX warns
// of a setting that no transport it opened reads. UCX_* variables in the environment are
// read as usual and win over these.
#pragma once

#include <ucp/api/ucp.h>

#include <initializer_list>
#include <memory>
#include <string_view>

namespace tutti::transport::ucx {

// Whether a UCX_TLS value ("all", "tcp,sm", "^sysv", ...) lets UCX open any of
// `transports`, named or through one of their `aliases` (sm, shm and mm for posix and
// sysv); "all" lets everything in, and a list after "^" is what UCX leaves out.
bool tls_allows(std::string_view tls, std::initializer_list<std::string_view> transports,
                std::initializer_list<std::string_view> aliases);

// Whether UCX's cma transport will open here: what its memory domain checks before it
// offers itself (UCX 1.13's cma_md.c), that this process may read its own memory with
// process_vm_readv (a seccomp profile may refuse) and that Yama's ptrace_scope is off
// or 1 (where UCX lets any process of the user attach, PR_SET_PTRACER_ANY).
bool cma_permitted();

// Whether the kernel lists an RDMA device (/sys/class/infiniband: InfiniBand, RoCE,
// iWARP, and the software ones, rxe and siw). True where sysfs is not there to ask.
bool rdma_devices_present();

class Context {
 public:
  // The process's context, created on first use and destroyed when its last holder
  // lets go. Any thread. Throws Error(kTransport) saying what UCX refused.
  static std::shared_ptr<Context> shared();
  // A new process context in place of `stale`, unless another thread renewed it
  // already (then that one). The devices UCX lists are those of when a context was
  // made: a worker made later fails with NO_DEVICE if one of them has gone since (a
  // container's or a test's network interface), and only a new listing avoids it.
  // Holders of the stale one keep it. Any thread.
  static std::shared_ptr<Context> renew(const std::shared_ptr<Context>& stale);

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ucp_context_h get() const { return context_; }

 private:
  explicit Context(ucp_context_h context) : context_(context) {}

  ucp_context_h context_;
};

}  // namespace tutti::transport::ucx
