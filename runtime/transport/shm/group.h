// Collectives through a shared-memory segment, for communicators whose ranks all live
// on one node (the bandwidth path of issue 3). Rank 0 creates the segment and
// publishes its name in the store; the others map it; it is unlinked as soon as all
// have, so nothing is left in /dev/shm even after a crash.
//
// Each collective moves data in chunks that stay in cache: every rank copies a chunk
// of its input into its slot, then reduces its own slice of the chunk across all slots
// in one pass (reduce_many), and every rank copies the reduced chunk out. Ranks
// signal each other with sequence counters in the segment; a waiter spins briefly,
// then sleeps on a futex (so 4 ranks on 2 cores do not burn the cores each other
// need), and checks the OpContext (abort, deadline) at least every few milliseconds.
//
// Same contract as algorithms.h: validated arguments, in-place forms as tutti.h
// allows, broadcast's root has copied send into `buffer`, AVG divided once, no
// allocation per operation. The segment's size is fixed at creation and does not
// grow with the world size times the message size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/common/deadline.h"
#include "runtime/operation/dtype.h"
#include "runtime/operation/op_context.h"
#include "runtime/store/client.h"
#include "runtime/transport/shm/layout.h"

namespace tutti::transport::shm {

// The most address space that tutti_mem_alloc's memory may take in one process: half
// of what x86-64 gives a process (47 bits, 128 TiB), so that the rest of the process
// still fits. Every rank maps every rank's part, so a rank of a group of `ranks` may
// ask for at most max_shared_part(ranks) bytes, a multiple of the page: larger sizes
// are refused at once, on every rank alike, before anything is rounded or multiplied
// (where they would wrap around).
constexpr size_t kMaxSharedMapping = size_t{1} << 46;
constexpr size_t max_shared_part(int ranks) {
  return kMaxSharedMapping / static_cast<size_t>(ranks < 1 ? 1 : ranks) / Layout::kPage * Layout::kPage;
}
// "" where `bytes` is at most max_shared_part(ranks), else what is wrong and the limit.
std::string shared_size_error(size_t bytes, int ranks);

class Group {
 public:
  // Collective over the communicator's ranks (all on this node). Keys go under
  // `prefix` ("world.0/shm/..."). Throws Error (kTransport naming the segment when it
  // cannot be created or mapped; kTimeout naming the missing ranks). slot_bytes: 0 for
  // the layout's own (layout.h); tests pass less.
  static std::unique_ptr<Group> create(store::Client& store, const std::string& prefix, int rank, int size,
                                       Deadline deadline, size_t slot_bytes = 0);
  virtual ~Group() = default;

  // Bytes of shared memory this group maps, for the per-communicator memory report.
  virtual size_t mapped_bytes() const = 0;

  // Memory for the user that every rank of the group maps (tutti_mem_alloc): collective,
  // in the order of the collectives, every rank passing the same `bytes`; keys under
  // `prefix`. Returns this rank's part. Collectives whose buffers lie in such memory
  // read (and the reductions write) them in place, in one pass instead of two or three
  // through the slots (group_copy.cc, group_reduce.cc).
  virtual void* allocate_shared(store::Client& store, const std::string& prefix, size_t bytes, Deadline deadline) = 0;
  // How many collectives so far read their peers' buffers in place in memory from
  // allocate_shared, rather than through the slots: what shows that such memory took
  // the one-copy path.
  virtual uint64_t in_place_runs() const = 0;
  // How many collectives so far read their peers' private buffers straight from their
  // processes rather than through the slots (group_peer_reads.cc).
  virtual uint64_t peer_read_runs() const = 0;
  // Unmaps what allocate_shared returned (peers keep their mappings until they free
  // theirs); false if `ptr` is not such memory. Every rank frees at the same point of
  // the collective order, so that all know the same regions.
  virtual bool free_shared(void* ptr) = 0;

  virtual void all_reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op,
                          const OpContext& context) = 0;
  virtual void reduce(const void* send, void* recv, size_t count, Dtype dtype, ReduceOp op, int root,
                      const OpContext& context) = 0;
  virtual void broadcast(void* buffer, size_t bytes, int root, const OpContext& context) = 0;
  virtual void all_gather(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) = 0;
  virtual void reduce_scatter(const void* send, void* recv, size_t count_per_rank, Dtype dtype, ReduceOp op,
                              const OpContext& context) = 0;
  virtual void gather(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) = 0;
  virtual void scatter(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) = 0;
  virtual void all_to_all(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) = 0;
  virtual void barrier(const OpContext& context) = 0;
};

}  // namespace tutti::transport::shm
