// Reading a peer's private buffer straight from its process (process_vm_readv, the
// kernel's one copy between two address spaces, as Open MPI's CMA path does), for
// all_gather, all_to_all, scatter and broadcast on buffers that do not lie in shared
// memory.
// Through the slots a block is copied twice, into the owner's slot and out of it; read
// from the peer, once.
//
// Which is faster depends on the data, so rank 0 times both per size (timed_choice.h)
// and every call takes the faster. On this project's 2-core VM (far state, 2 ranks, a
// throwaway program of the two forms, us a call at 32 KiB / 256 KiB / 2 MiB a rank):
//   - a send buffer that stays the same from call to call, as benchmarks keep it:
//     4.4 / 27 / 479 read from the peer against 8.5 / 44 / 567 through the slots (each
//     core keeps its copy of the peer's unchanged lines; a slot's are rewritten);
//   - a send buffer rewritten before every call: 11.3 / 59 / 589 against 9.3 / 53 /
//     755, so the slots win below a few hundred KiB.
// In tutti-bench (the first), 2 ranks, 64 KiB / 256 KiB / 1 MiB in all: 5.3 / 15.1 /
// 79 us with the choice, 7.9 / 22.9 / 109 through the slots alone, Open MPI 6.0 / 15.3
// / 75.
//
// Where ranks share CPUs (cpu_share.h), the step that announces the blocks, which every
// call of the choice takes, costs a context switch or two. 4 ranks on the 2 cores,
// whole-array bytes:
//   - all_gather: the choice was 6-38% slower from 64 KiB to 16 MiB but at 4 MiB, so it
//     reads peers only where every rank has a CPU;
//   - all_to_all, whose slots take a step per part of a slot: 64 KiB 17.5 -> 22.5 us,
//     256 KiB 62.8 -> 47.1, 1 MiB 338 -> 277, so from 64 KiB a rank;
//   - scatter, whose root copies every block into the slots: 128 KiB 13.6-13.8 ->
//     15.7-17.1, 512 KiB level, 2 MiB 220-259 -> 142-219, so from 128 KiB a rank.
//
// The kernel may refuse (a container's seccomp profile, Yama's ptrace_scope, a peer of
// another user): a rank that could not read tells so in the step that ends the call,
// every rank then does the call again through the slots, and the group reads no peer
// again, all ranks alike.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/common/cpu_share.h"
#include "runtime/transport/shm/segment_group.h"
#include "runtime/transport/shm/stream_copy.h"

namespace tutti::transport::shm {
namespace {

// A rank's block from which a call may read peers: below it the slots are as fast (8
// KiB blocks at 2 ranks: 2.6 us a call, Open MPI 3.4).
constexpr size_t kReadPeersFromBytes = size_t{16} << 10;

}  // namespace

bool SegmentGroup::may_read_peers(const PeerReadChoice& choice, size_t bytes) const {
  return size_ > 1 && !peer_reads_off_ && bytes >= kReadPeersFromBytes &&
         !(ranks_share_cpus_ && bytes < choice.sharing_cpus_from_bytes);
}

uint64_t SegmentGroup::announce_block(const void* block, bool readable, PeerReadChoice& choice, size_t bytes,
                                      const OpContext& context) {
  const uint64_t step = ++step_;
  claim_entry(step, context);
  PeerBlock mine;
  mine.address = reinterpret_cast<uintptr_t>(block);
  mine.last_ns = choice.last_ns;
  mine.pid = static_cast<int32_t>(getpid());
  if (!cpus_told_) {
    const CpuShare cpus = this_process_cpu_share();
    mine.cpu_bits = cpus.cpu_bits;
    mine.cpus = static_cast<uint16_t>(std::min<int32_t>(cpus.cpus, UINT16_MAX));
    mine.claim = cpus.claim;
  }
  mine.form = rank_ == 0 ? static_cast<PeerReadForm>(choice.choice.choose(bytes)) : kFromPeers;
  if (!readable) mine.form = kThroughSlots;
  std::memcpy(step_data(rank_, step, sizeof mine), &mine, sizeof mine);
  post(step, step + 1, context);
  wait_all(step, context, 0, 1);
  if (!cpus_told_) {
    cpus_told_ = true;
    std::vector<CpuShare> shares(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      const PeerBlock told = peer_block(r, step);
      shares[r].cpu_bits = told.cpu_bits;
      shares[r].cpus = told.cpus;
      shares[r].claim = told.claim;
    }
    ranks_share_cpus_ = !every_rank_has_a_cpu(shares);
  }
  if (rank_ == 0 && choice.last_ns >= 0) {
    int64_t slowest = 0;
    for (int r = 0; r < size_; ++r) slowest = std::max(slowest, peer_block(r, step).last_ns);
    choice.choice.record(choice.last_bytes, choice.last_form, slowest);
  }
  return step;
}

SegmentGroup::PeerBlock SegmentGroup::peer_block(int rank, uint64_t step) const {
  PeerBlock block;
  std::memcpy(&block, step_data(rank, step, sizeof block), sizeof block);
  return block;
}

bool SegmentGroup::read_peer(const PeerBlock& from, size_t offset, void* to, size_t bytes) const {
  auto* at = static_cast<unsigned char*>(to);
  uintptr_t remote_at = static_cast<uintptr_t>(from.address) + offset;
  while (bytes > 0) {
    iovec local{at, bytes};
    iovec remote{reinterpret_cast<void*>(remote_at), bytes};
    // Past about 2 GiB the kernel moves less per call; an error, or nothing moved,
    // is a refusal.
    const ssize_t moved = process_vm_readv(from.pid, &local, 1, &remote, 1, 0);
    if (moved <= 0) return false;
    at += moved;
    remote_at += static_cast<uintptr_t>(moved);
    bytes -= static_cast<size_t>(moved);
  }
  return true;
}

bool SegmentGroup::all_read(bool read, const OpContext& context) {
  const uint64_t done = ++step_;
  claim_entry(done, context);
  *step_data(rank_, done, 1) = read ? 1 : 0;
  post(done, done + 1, context);
  wait_all(done, context, 0, 1);
  for (int r = 0; r < size_; ++r) {
    if (*step_data(r, done, 1) == 0) {
      peer_reads_off_ = true;
      return false;
    }
  }
  ++peer_read_runs_;
  return true;
}

// Every rank reads every other block from its owner, starting after its own so that
// the ranks do not all read one rank's block at once, and then copies its own. The
// other way round, 2 ranks took 1-25% longer from 64 KiB to 1 MiB in all, in each of
// three runs alternating both (far state; 1 MiB, six rounds: 68.4 against 61.4 us,
// Open MPI 71.7); at 2 and 4 MiB the two were level (one run 6% the other way at 2
// MiB). all_to_all's reads gained nothing from that order.
bool SegmentGroup::all_gather_from_peers(const unsigned char* in, unsigned char* out, size_t bytes_per_rank,
                                         uint64_t step, const OpContext& context) {
  const size_t all_bytes = bytes_per_rank * size_;
  bool read = true;
  for (int i = 1; i < size_ && read; ++i) {
    const int r = (rank_ + i) % size_;
    read = read_peer(peer_block(r, step), 0, out + r * bytes_per_rank, bytes_per_rank);
  }
  if (out + rank_ * bytes_per_rank != in) copy_out(out + rank_ * bytes_per_rank, in, bytes_per_rank, all_bytes);
  return all_read(read, context);
}

// The same for all_to_all: the block for this rank in every other rank's send buffer.
bool SegmentGroup::all_to_all_from_peers(const unsigned char* in, unsigned char* out, size_t bytes_per_rank,
                                         uint64_t step, const OpContext& context) {
  const size_t all_bytes = bytes_per_rank * size_;
  copy_out(out + rank_ * bytes_per_rank, in + rank_ * bytes_per_rank, bytes_per_rank, all_bytes);
  bool read = true;
  for (int i = 1; i < size_ && read; ++i) {
    const int r = (rank_ + i) % size_;
    read = read_peer(peer_block(r, step), rank_ * bytes_per_rank, out + r * bytes_per_rank, bytes_per_rank);
  }
  return all_read(read, context);
}

// scatter and broadcast: every other rank reads its part of root's buffer (its block,
// or the whole); root only waits (in all_read) until they are done with it. Through the
// slots root copies every part in itself, and the others copy it out again.
bool SegmentGroup::read_from_root(unsigned char* out, size_t offset, size_t bytes, int root, uint64_t step,
                                  const OpContext& context) {
  return all_read(rank_ == root || read_peer(peer_block(root, step), offset, out, bytes), context);
}

}  // namespace tutti::transport::shm
