// Where everything lives in a group's shared-memory segment. Every rank computes the
// same layout from the number of ranks alone, so nothing but the segment's name has to
// travel through the store.
//
//   stamp     one page, whose first bytes segment.cc stamps and checks
//   controls  one Control per rank (signal.h), each on cache lines of its own
//   notes     per rank one note of kNoteBytes per step entry, for the data of that
//             entry's step when it is too large for the entry itself but fits here
//   cells     per rank one cell of cell_bytes per step entry, for the data of that
//             entry's step when it is too large for the note
//   slots     per rank two slots of slot_bytes (double-buffered by the group's use count)
//   results   two areas of slot_bytes, the reduced chunks every rank copies out
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/transport/shm/signal.h"

namespace tutti::transport::shm {

struct Layout {
  // Bytes of one slot (and of one result area): the most one pipeline step moves.
  // Measured with all_reduce of float32 at 16 and 64 MiB on this project's 2-core VM
  // (Zen 5, 1 MiB L2 per core): at 2 ranks 512 KiB and 1 MiB were 3-6% ahead of
  // 256 KiB (16 MiB: 7.4-7.5 vs 7.0 GB/s); at 4 ranks sharing the 2 cores, where each
  // step costs context switches, 1 MiB was 7-10% ahead of 512 KiB and 35% ahead of
  // 256 KiB. Shrinks as ranks are added so that slots and result areas stay within
  // about kSegmentBudget (at 16 ranks 960 KiB slots, at 64 ranks 252 KiB, a page from
  // 4,096 ranks on); the cells add at most kCellBudget. The data movers use less of a
  // slot per step (group_copy.cc).
  static constexpr size_t kMaxSlotBytes = size_t{1} << 20;
  static constexpr size_t kSegmentBudget = size_t{32} << 20;
  static constexpr size_t kPage = 4096;
  // Each Control gets its step entries and a pair of lines for the rest, so that no
  // 128-byte pair of lines (the adjacent-line prefetcher fetches lines in pairs) mixes
  // two ranks' words, or a rank's step entries with the sleeper count that its peers
  // write.
  static constexpr size_t kControlStride = kStepEntries * sizeof(StepEntry) + 2 * kCacheLine;
  // Bytes of one cell, and all ranks' cells together at most. A cell lets the one-sided
  // collectives (broadcast, gather, scatter) run as far ahead with a few KiB as with
  // the few bytes that fit in a step entry; data in a slot can be only one call ahead,
  // and at 4 ranks on this project's 2 cores that cost a 4 KiB broadcast about a
  // context switch per call (8-16 us, against 1.6-2.2 us through cells; Open MPI 19).
  // 4 KiB up to 16 ranks, 1 KiB at 64. tmpfs gives a page only when a rank first
  // writes it, so cells that no collective uses cost address space, not memory.
  static constexpr size_t kMaxCellBytes = 4096;
  // Bytes of one note. Notes lie next to each other, so that consecutive steps' data
  // shares cache lines as their entries do (two notes per line), where cells, a page
  // apart, would cost every step a line of its own.
  static constexpr size_t kNoteBytes = 32;
  static constexpr size_t kCellBudget = size_t{16} << 20;

  int size = 0;
  size_t slot_bytes = 0;
  size_t cell_bytes = 0;
  size_t controls_offset = 0;
  size_t notes_offset = 0;
  size_t cells_offset = 0;
  size_t slots_offset = 0;
  size_t results_offset = 0;
  size_t total_bytes = 0;

  static constexpr size_t round_up(size_t value, size_t to) { return (value + to - 1) / to * to; }

  // slot_bytes: 0 for the size's own; tests pass a few cache lines, to take the paths
  // of groups too large to give every rank a part of a slot at once.
  static Layout for_size(int size, size_t slot_bytes = 0) {
    Layout layout;
    layout.size = size;
    size_t buffers = 2 * (static_cast<size_t>(size) + 1);
    size_t fitting = kSegmentBudget / buffers / kPage * kPage;
    // At least a page: past about 500 ranks the collectives that split a slot among the
    // ranks (reduce_scatter, all_to_all) serve the ranks a slot's worth of cache lines
    // at a time (SegmentGroup::parts_of_slot) rather than grow every slot with the
    // group, which made the segment grow as the ranks squared (8 GiB at 4,096).
    layout.slot_bytes = fitting < kMaxSlotBytes ? fitting : kMaxSlotBytes;
    if (layout.slot_bytes < kPage) layout.slot_bytes = kPage;
    if (slot_bytes > 0) layout.slot_bytes = slot_bytes;
    size_t cells = static_cast<size_t>(size) * kStepEntries;
    layout.cell_bytes = kCellBudget / cells / kCacheLine * kCacheLine;
    if (layout.cell_bytes > kMaxCellBytes) layout.cell_bytes = kMaxCellBytes;
    if (layout.cell_bytes < kCacheLine) layout.cell_bytes = kCacheLine;
    layout.controls_offset = kPage;
    layout.notes_offset = round_up(layout.controls_offset + size * kControlStride, kPage);
    layout.cells_offset = round_up(layout.notes_offset + cells * kNoteBytes, kPage);
    layout.slots_offset = round_up(layout.cells_offset + cells * layout.cell_bytes, kPage);
    layout.results_offset = layout.slots_offset + 2 * static_cast<size_t>(size) * layout.slot_bytes;
    layout.total_bytes = layout.results_offset + 2 * layout.slot_bytes;
    return layout;
  }
};

static_assert(sizeof(Control) <= Layout::kControlStride && Layout::kControlStride % 128 == 0);

}  // namespace tutti::transport::shm
