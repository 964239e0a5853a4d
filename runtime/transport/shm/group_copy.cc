// The collectives of SegmentGroup that only move data: broadcast, gather and scatter,
// one-sided (only the ranks that receive wait, and only for the rank that owns the
// data; segment_group.h), and all_gather and all_to_all, runs of symmetric steps. A
// rank's own block never goes through shared memory, and is not copied at all in
// place. Data that fits rides in the owner's step entry, so that a reader fetches step,
// shape and data in one cache line, or else in the entry's note or cell (segment_group.h).
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/transport/shm/segment_group.h"
#include "runtime/transport/shm/stream_copy.h"

namespace tutti::transport::shm {
namespace {

// The chunk of one step of broadcast, all_gather, gather and scatter (at most a slot).
// Smaller than the reductions' chunks because these collectives serialise within a
// step (broadcast: root copies in, then the others copy out), so finer steps pipeline
// better. Measured on this project's 2-core VM, at 2 ranks 128-256 KiB beat 1 MiB
// four times over for a 1 MiB broadcast and twice for a 16 MiB all_gather, and 64 KiB
// or less lost 10-30%; at 4 ranks sharing the 2 cores, 256 KiB was best throughout.
constexpr size_t kCopyChunkBytes = size_t{256} << 10;

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

void copy_plain(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

// How the in-place forms copy into a result of result_bytes, which no peer reads: from
// kStreamInPlaceFromBytes on, where it no longer stays in cache anyway, with streaming
// stores, which then cost no one's cache (stream_copy.h).
void (*in_place_copy(size_t result_bytes))(void*, const void*, size_t) {
  return result_bytes >= kStreamInPlaceFromBytes ? copy_streaming : copy_plain;
}

// The sizes from which, and below which, broadcast may read root's buffer from its
// process rather than through the slots. Elsewhere the slots' one-sided form is faster:
// root returns once it has published, so that back-to-back calls overlap, where a read
// takes a step in which every rank waits for every other, and root waits for the reads.
// 2 ranks, far state (330-406 ns), tutti-bench broadcast -B 5, medians of three rounds
// alternating the build before, the two forms forced and Open MPI (--mca btl self,vader),
// us, slots alone / read forced / chosen by time (Open MPI):
//   16 KiB 2.20 / 2.73 / 2.86 (2.59), 32 KiB 4.04 / 3.83 / 3.97 (3.84), 64 KiB 7.49 /
//   5.74 / 5.76 (5.65), 256 KiB 18.2 / 17.4 / 16.9 (16.1), 512 KiB 35.3 / 32.8 / 31.1
//   (30.4), 1 MiB 72.9 / 80.7 / 84.9 (99.0), 2 MiB 195 / 270 / 203 (267).
// Where ranks share CPUs it never reads (4 ranks on the 2 cores, 128 KiB to 2 MiB: the
// slots alone 20-397 us, the reads forced 34-537).
constexpr size_t kBroadcastReadsRootFromBytes = size_t{64} << 10;
constexpr size_t kBroadcastReadsRootBelowBytes = size_t{1} << 20;

// The piece of its block that all_gather_in_place copies into every result before the
// next: it stays in L2 between the copies.
constexpr size_t kPushPieceBytes = size_t{64} << 10;

// Chunk c of a block of `bytes`, in chunks of `chunk`: its offset and length.
std::pair<size_t, size_t> chunk_span(size_t c, size_t chunk, size_t bytes) {
  return {c * chunk, std::min(chunk, bytes - c * chunk)};
}

// A piece of a receive buffer of buffer_bytes, unless it is already in place.
void copy_unless_same(unsigned char* dst, const unsigned char* src, size_t bytes, size_t buffer_bytes) {
  if (dst != src) copy_out(dst, src, bytes, buffer_bytes);
}

}  // namespace

size_t SegmentGroup::copy_chunk() const { return std::min(kCopyChunkBytes, layout_.slot_bytes); }

// Root publishes each chunk (in its step entry, note or cell when the whole message fits
// there, else in its slot) and goes on; the others wait for it and copy the chunk out.
// Root waits only to reuse an entry, note, cell or slot that a reader has not left yet, so a
// large broadcast pipelines chunk c + 1 into one slot while the readers copy chunk c
// out of the other. Or, in a band of sizes where rank 0 has found it faster, the others
// read root's buffer straight from its process (group_peer_reads.cc), and root waits
// until they have.
void SegmentGroup::broadcast(void* buffer, size_t bytes, int root, const OpContext& context) {
  run(context, Shape{bytes, -1, -1, root}, [&] {
    if (bytes == 0) return;
    auto* data = static_cast<unsigned char*>(buffer);
    if (may_read_in_place(bytes) && read_root_in_place(data, bytes, data, 0, bytes, root, context)) return;
    if (bytes <= layout_.cell_bytes) {
      const uint64_t step = ++step_;
      if (rank_ == root) {
        claim_entry(step, context);
        std::memcpy(step_data(rank_, step, bytes), data, bytes);
        post(step, step + 1, context);
      } else {
        post(step, 0, context);
        wait_owner(root, step, context, 0, 1);
        std::memcpy(data, step_data(root, step, bytes), bytes);
      }
      return;
    }
    const size_t chunk = copy_chunk();
    auto through_slots = [&] {
      steps_from_root(
          ceil_div(bytes, chunk), root, context,
          [&](size_t c, uint64_t use) {
            auto [offset, n] = chunk_span(c, chunk, bytes);
            std::memcpy(slot(root, use), data + offset, n);
          },
          [&](size_t c, uint64_t use) {
            auto [offset, n] = chunk_span(c, chunk, bytes);
            copy_out(data + offset, slot(root, use), n, bytes);
          });
    };
    if (bytes < kBroadcastReadsRootFromBytes || bytes >= kBroadcastReadsRootBelowBytes ||
        !may_read_peers(broadcasts_, bytes)) {
      return through_slots();
    }
    from_peers_or_slots(
        broadcasts_, rank_ == root ? data : nullptr, true, bytes, context,
        [&](uint64_t step) { return read_from_root(data, 0, bytes, root, step, context); }, through_slots);
  });
}

// Every rank puts the chunk of its block in its slot, and copies every block's chunk out;
// or, from kReadPeersFromBytes a rank where rank 0 has found it faster, reads the
// other blocks straight from their owners (group_peer_reads.cc).
void SegmentGroup::all_gather(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) {
  run(context, Shape{bytes_per_rank}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (may_read_in_place(bytes_per_rank) && all_gather_in_place(in, out, bytes_per_rank, context)) return;
    auto through_slots = [&] {
      const size_t chunk = copy_chunk();
      steps(
          ceil_div(bytes_per_rank, chunk), context,
          [&](size_t c, uint64_t use) {
            auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
            std::memcpy(slot(rank_, use), in + offset, n);
          },
          [&](size_t c, uint64_t use) {
            auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
            copy_out_blocks(out, in, offset, n, use, bytes_per_rank);
          });
    };
    if (!may_read_peers(all_gathers_, bytes_per_rank)) return through_slots();
    from_peers_or_slots(
        all_gathers_, in, true, bytes_per_rank, context,
        [&](uint64_t step) { return all_gather_from_peers(in, out, bytes_per_rank, step, context); }, through_slots);
  });
}

// Root tells where its data (root_bytes at root_data) lies. In shared memory, every
// other rank copies its part, [offset, offset + bytes of out) of it, straight into
// `out`, and root returns (and may change its data) only once every reader has posted
// that it is done, one step later. A broadcast's readers take all of root's data, a
// scatter's their own block.
bool SegmentGroup::read_root_in_place(const unsigned char* root_data, size_t root_bytes, unsigned char* out,
                                      size_t offset, size_t bytes, int root, const OpContext& context) {
  const uint64_t step = ++step_;
  Place place;
  if (rank_ == root) {
    place = place_of(root_data, root_bytes);
    claim_entry(step, context);
    write_places(step, Places{place, {}});
    post(step, step + 1, context);
  } else {
    post(step, 0, context);
    wait_owner(root, step, context, 0, 1);
    place = read_places(root, step).source;
  }
  if (place.region == 0) return false;
  const uint64_t done = ++step_;
  if (rank_ == root) {
    post(done, 0, context);
    wait_all(done, context, 0, 1);
  } else {
    copy_out(out, mapped_at(root, place, root_bytes, context) + offset, bytes, bytes);
    post(done, 0, context);
  }
  ++in_place_runs_;
  return true;
}

// Every rank tells where its block and its result lie. When every result lies in shared
// memory, each rank copies its own block straight into every result, a piece at a
// time, so that it reads its block once; else, when every block lies in shared memory,
// each rank copies every block straight into its result, starting after its own so
// that they do not all read one rank's block at once. Either way every rank then waits
// until all are done with its block and its result. Measured at 2 ranks, vCPUs far
// apart, each rank copying its block into both results took 394-436 us at 16 MiB
// against 508-580 copying both blocks into its result, 65 against 81-90 at 4 MiB, and
// 2400-2850 against 2870-3620 at 64 MiB, where the writes stream (stream_copy.h).
bool SegmentGroup::all_gather_in_place(const unsigned char* in, unsigned char* out, size_t bytes_per_rank,
                                       const OpContext& context) {
  const size_t all_bytes = bytes_per_rank * size_;
  const uint64_t step = announce_places(Places{place_of(in, bytes_per_rank), place_of(out, all_bytes)}, context);
  bool results_shared = true;
  for (int r = 0; r < size_; ++r) results_shared = results_shared && read_places(r, step).result.region != 0;
  if (results_shared) {
    targets_.clear();
    for (int i = 0; i < size_; ++i) {
      const int r = (rank_ + i) % size_;
      unsigned char* target = mapped_at(r, read_places(r, step).result, all_bytes, context) + rank_ * bytes_per_rank;
      if (target != in) targets_.push_back(target);
    }
    for (size_t offset = 0; offset < bytes_per_rank; offset += kPushPieceBytes) {
      const size_t n = std::min(kPushPieceBytes, bytes_per_rank - offset);
      for (void* target : targets_) copy_out(static_cast<unsigned char*>(target) + offset, in + offset, n, all_bytes);
    }
  } else if (sources_shared(step)) {
    auto copy = in_place_copy(all_bytes);
    if (out + rank_ * bytes_per_rank != in) copy(out + rank_ * bytes_per_rank, in, bytes_per_rank);
    for (int i = 1; i < size_; ++i) {
      const int r = (rank_ + i) % size_;
      copy(out + r * bytes_per_rank, mapped_at(r, read_places(r, step).source, bytes_per_rank, context),
           bytes_per_rank);
    }
  } else {
    return false;
  }
  wait_done_in_place(context);
  return true;
}

// Every rank tells where its block lies, and root where its result does. When root's
// result lies in shared memory, every rank copies its own block straight into it, so
// that the ranks share the work; else, when every block lies in shared memory, root
// copies them all straight out. Either way every rank waits until all copies are
// done: root for its result, the others to keep their block unchanged. Measured at 2
// ranks, 2 x 32 MiB: root copying both blocks alone took 2930-3270 us against
// 2370-2470 through the slots, where the other rank copies its block in at the same
// time; each rank copying its own took 1460-1580 us (the slots, in that run: 3250-3420).
bool SegmentGroup::gather_in_place(const unsigned char* in, unsigned char* out, size_t bytes_per_rank, int root,
                                   const OpContext& context) {
  const size_t all_bytes = bytes_per_rank * size_;
  const uint64_t step = announce_places(
      Places{place_of(in, bytes_per_rank), rank_ == root ? place_of(out, all_bytes) : Place{}}, context);
  auto copy = in_place_copy(all_bytes);
  const Place result = read_places(root, step).result;
  if (result.region != 0) {
    unsigned char* mine = mapped_at(root, result, all_bytes, context) + rank_ * bytes_per_rank;
    if (mine != in) copy(mine, in, bytes_per_rank);
  } else {
    if (!sources_shared(step)) return false;
    for (int r = 0; rank_ == root && r < size_; ++r) {
      const unsigned char* from = r == rank_ ? in : mapped_at(r, read_places(r, step).source, bytes_per_rank, context);
      if (out + r * bytes_per_rank != from) copy(out + r * bytes_per_rank, from, bytes_per_rank);
    }
  }
  wait_done_in_place(context);
  return true;
}

// Every rank tells where its send buffer lies. When all lie in shared memory, each rank
// copies its block of every rank's straight into `out`, starting after its own, and
// waits until every rank is done reading its buffer. (In place, send == recv, the
// engine has staged send in private memory, so this goes through the slots.)
bool SegmentGroup::all_to_all_in_place(const unsigned char* in, unsigned char* out, size_t bytes_per_rank,
                                       const OpContext& context) {
  const size_t all_bytes = bytes_per_rank * size_;
  const uint64_t step = announce_places(Places{place_of(in, all_bytes), {}}, context);
  if (!sources_shared(step)) return false;
  auto copy = in_place_copy(all_bytes);
  for (int i = 0; i < size_; ++i) {
    const int r = (rank_ + i) % size_;
    const unsigned char* from = r == rank_ ? in : mapped_at(r, read_places(r, step).source, all_bytes, context);
    copy(out + r * bytes_per_rank, from + rank_ * bytes_per_rank, bytes_per_rank);
  }
  wait_done_in_place(context);
  return true;
}

// Chunk (offset, n) of every rank's block into `out`: this rank's own from `in`, the
// others' from their slots; all_gather and gather's root read the same way.
void SegmentGroup::copy_out_blocks(unsigned char* out, const unsigned char* in, size_t offset, size_t n, uint64_t use,
                                   size_t bytes_per_rank) {
  for (int r = 0; r < size_; ++r) {
    const unsigned char* from = r == rank_ ? in + offset : slot(r, use);
    copy_unless_same(out + r * bytes_per_rank + offset, from, n, bytes_per_rank * size_);
  }
}

// The ranks other than root publish their chunk (in their step entry, note or cell when a
// block fits there, else in their slot) and go on; root waits for each and copies them out.
void SegmentGroup::gather(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) {
  run(context, Shape{bytes_per_rank, -1, -1, root}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (may_read_in_place(bytes_per_rank) && gather_in_place(in, out, bytes_per_rank, root, context)) return;
    if (bytes_per_rank <= layout_.cell_bytes) {
      step_to_root(in, bytes_per_rank, root, context, [&](int r, const unsigned char* from) {
        copy_unless_same(out + r * bytes_per_rank, from, bytes_per_rank, bytes_per_rank * size_);
      });
      return;
    }
    const size_t chunk = copy_chunk();
    steps_to_root(
        ceil_div(bytes_per_rank, chunk), root, context,
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          std::memcpy(slot(rank_, use), in + offset, n);
        },
        [&](size_t c, uint64_t use) {
          auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
          copy_out_blocks(out, in, offset, n, use, bytes_per_rank);
        });
  });
}

// Root publishes every other rank's chunk (all blocks in its step entry, note or cell when
// they fit there together, else block r in rank r's slot, which rank r leaves alone during a
// scatter) and goes on; each rank waits for root and copies its chunk out. Or, from
// kReadPeersFromBytes a rank where rank 0 has found it faster, each rank reads its block
// from root's process, and root waits until all have (group_peer_reads.cc).
void SegmentGroup::scatter(const void* send, void* recv, size_t bytes_per_rank, int root, const OpContext& context) {
  run(context, Shape{bytes_per_rank, -1, -1, root}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (rank_ == root) copy_unless_same(out, in + root * bytes_per_rank, bytes_per_rank, bytes_per_rank);
    const size_t all_bytes = bytes_per_rank * size_;
    if (may_read_in_place(bytes_per_rank) &&
        read_root_in_place(in, all_bytes, out, rank_ * bytes_per_rank, bytes_per_rank, root, context)) {
      return;
    }
    if (all_bytes <= layout_.cell_bytes) {
      const uint64_t step = ++step_;
      if (rank_ == root) {
        claim_entry(step, context);
        std::memcpy(step_data(rank_, step, all_bytes), in, all_bytes);
        post(step, step + 1, context);
      } else {
        post(step, 0, context);
        wait_owner(root, step, context, 0, 1);
        std::memcpy(out, step_data(root, step, all_bytes) + rank_ * bytes_per_rank, bytes_per_rank);
      }
      return;
    }
    const size_t chunk = copy_chunk();
    auto through_slots = [&] {
      steps_from_root(
          ceil_div(bytes_per_rank, chunk), root, context,
          [&](size_t c, uint64_t use) {
            auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
            for (int r = 0; r < size_; ++r) {
              if (r != root) std::memcpy(slot(r, use), in + r * bytes_per_rank + offset, n);
            }
          },
          [&](size_t c, uint64_t use) {
            auto [offset, n] = chunk_span(c, chunk, bytes_per_rank);
            copy_out(out + offset, slot(rank_, use), n, bytes_per_rank);
          });
    };
    if (!may_read_peers(scatters_, bytes_per_rank)) return through_slots();
    from_peers_or_slots(
        scatters_, rank_ == root ? in : nullptr, true, bytes_per_rank, context,
        [&](uint64_t step) { return read_from_root(out, rank_ * bytes_per_rank, bytes_per_rank, root, step, context); },
        through_slots);
  });
}

// Every rank puts its chunk of block r in part r of its slot; rank r collects part r of
// every slot. The parts split a whole slot, as reduce_scatter's do: every rank copies
// in and out at the same time, so larger steps only save handshakes. In place
// (send == recv) this is safe chunk by chunk: the chunk of block r that a rank
// overwrites is the one it has just put in its slot. Where a slot has no cache line
// for every rank, each chunk takes a round of steps (parts_of_slot), and a rank that
// collects in an early round would overwrite chunks it has yet to put: in place, it
// puts from a copy of its input. Or, as for all_gather, each rank reads its block from
// every other rank's process (not where a rank is in place).
void SegmentGroup::all_to_all(const void* send, void* recv, size_t bytes_per_rank, const OpContext& context) {
  run(context, Shape{bytes_per_rank}, [&] {
    if (bytes_per_rank == 0) return;
    const auto* in = static_cast<const unsigned char*>(send);
    auto* out = static_cast<unsigned char*>(recv);
    if (may_read_in_place(bytes_per_rank) && all_to_all_in_place(in, out, bytes_per_rank, context)) return;
    auto through_slots = [&] {
      const SlotParts parts = parts_of_slot();
      std::vector<unsigned char> input;
      if (in == out && parts.rounds > 1) {
        input.assign(in, in + bytes_per_rank * size_);
        in = input.data();
      }
      auto round = [&](size_t s) { return static_cast<int>(s % static_cast<size_t>(parts.rounds)); };
      auto span = [&](size_t s) {
        return chunk_span(s / static_cast<size_t>(parts.rounds), parts.part_bytes, bytes_per_rank);
      };
      steps(
          ceil_div(bytes_per_rank, parts.part_bytes) * static_cast<size_t>(parts.rounds), context,
          [&](size_t s, uint64_t use) {
            auto [offset, n] = span(s);
            unsigned char* mine = slot(rank_, use);
            const int first = parts.first(round(s));
            for (int r = first; r < std::min(size_, first + parts.ranks_per_step); ++r) {
              if (r != rank_) std::memcpy(mine + (r - first) * parts.part_bytes, in + r * bytes_per_rank + offset, n);
            }
          },
          [&](size_t s, uint64_t use) {
            if (parts.round_of(rank_) != round(s)) return;  // the ranks of another round
            auto [offset, n] = span(s);
            const size_t mine = static_cast<size_t>(rank_ - parts.first(round(s))) * parts.part_bytes;
            for (int r = 0; r < size_; ++r) {
              const unsigned char* from = r == rank_ ? in + rank_ * bytes_per_rank + offset : slot(r, use) + mine;
              copy_unless_same(out + r * bytes_per_rank + offset, from, n, bytes_per_rank * size_);
            }
          });
    };
    if (!may_read_peers(all_to_alls_, bytes_per_rank)) return through_slots();
    // In place, peers would read blocks that this rank overwrites.
    from_peers_or_slots(
        all_to_alls_, in, in != out, bytes_per_rank, context,
        [&](uint64_t step) { return all_to_all_from_peers(in, out, bytes_per_rank, step, context); }, through_slots);
  });
}

}  // namespace tutti::transport::shm
