#include "runtime/health/op_history.h"

#include <algorithm>

#include "runtime/common/concat.h"
#include "runtime/common/deadline.h"
#include "runtime/common/duration_text.h"

namespace tutti::health {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

}  // namespace

// A seqlock per slot: the version is odd while the fields change, so a reader that
// sees the same even version before and after its copy has a consistent record.
template <typename Write>
void OpHistory::write(uint32_t seq, Write&& write_fields) {
  Slot& slot = slots_[seq % kCapacity];
  uint32_t version = slot.version.load(kRelaxed);
  slot.version.store(version + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  write_fields(slot);
  slot.version.store(version + 2, std::memory_order_release);
}

void OpHistory::issued(uint32_t seq, const OpFacts& facts, int64_t now_ms, bool running) {
  write(seq, [&](Slot& slot) {
    slot.seq.store(seq, kRelaxed);
    slot.name.store(facts.name, kRelaxed);
    slot.dtype.store(facts.dtype, kRelaxed);
    slot.op.store(facts.op, kRelaxed);
    slot.count.store(facts.count, kRelaxed);
    slot.root.store(facts.root, kRelaxed);
    auto state = running ? OpRecord::State::kRunning : OpRecord::State::kQueued;
    slot.state.store(static_cast<uint8_t>(state), kRelaxed);
    slot.status.store(0, kRelaxed);
    slot.issued_ms.store(now_ms, kRelaxed);
    slot.started_ms.store(running ? now_ms : 0, kRelaxed);
    slot.finished_ms.store(0, kRelaxed);
  });
}

void OpHistory::started(uint32_t seq, int64_t now_ms) {
  write(seq, [&](Slot& slot) {
    if (slot.seq.load(kRelaxed) != seq) return;  // overwritten by a newer issue: too many queued
    slot.state.store(static_cast<uint8_t>(OpRecord::State::kRunning), kRelaxed);
    slot.started_ms.store(now_ms, kRelaxed);
  });
}

void OpHistory::finished(uint32_t seq, Status status, int64_t now_ms) {
  write(seq, [&](Slot& slot) {
    if (slot.seq.load(kRelaxed) != seq) return;
    auto state = status == Status::kOk ? OpRecord::State::kDone : OpRecord::State::kFailed;
    slot.state.store(static_cast<uint8_t>(state), kRelaxed);
    slot.status.store(static_cast<int32_t>(status), kRelaxed);
    slot.finished_ms.store(now_ms, kRelaxed);
  });
}

bool OpHistory::read(const Slot& slot, OpRecord* record) const {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    uint32_t before = slot.version.load(std::memory_order_acquire);
    if (before & 1) continue;
    record->seq = slot.seq.load(kRelaxed);
    record->facts.name = slot.name.load(kRelaxed);
    record->facts.dtype = slot.dtype.load(kRelaxed);
    record->facts.op = slot.op.load(kRelaxed);
    record->facts.count = slot.count.load(kRelaxed);
    record->facts.root = slot.root.load(kRelaxed);
    record->state = static_cast<OpRecord::State>(slot.state.load(kRelaxed));
    record->status = static_cast<Status>(slot.status.load(kRelaxed));
    record->issued_ms = slot.issued_ms.load(kRelaxed);
    record->started_ms = slot.started_ms.load(kRelaxed);
    record->finished_ms = slot.finished_ms.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.version.load(kRelaxed) == before) return record->seq != 0;
  }
  return false;  // written to without pause: skip it rather than wait
}

std::vector<OpRecord> OpHistory::recent() const {
  std::vector<OpRecord> records;
  for (const Slot& slot : slots_) {
    OpRecord record;
    if (read(slot, &record)) records.push_back(record);
  }
  std::sort(records.begin(), records.end(), [](const OpRecord& a, const OpRecord& b) { return a.seq < b.seq; });
  return records;
}

std::string OpHistory::format() const {
  int64_t now = coarse_now_ms();
  std::string text;
  for (const OpRecord& r : recent()) {
    text += concat("  #", r.seq, " ", r.facts.name);
    if (*r.facts.dtype) text += concat(" ", r.facts.dtype, " x ", r.facts.count);
    if (*r.facts.op) text += concat(" ", r.facts.op);
    if (r.facts.root >= 0) text += concat(" root ", r.facts.root);
    switch (r.state) {
      case OpRecord::State::kQueued: text += concat(": queued for ", duration_text(now - r.issued_ms)); break;
      case OpRecord::State::kRunning: text += concat(": running for ", duration_text(now - r.started_ms)); break;
      case OpRecord::State::kDone:
        text += concat(": done in ", duration_text(r.finished_ms - r.started_ms), ", ",
                       duration_text(now - r.finished_ms), " ago");
        break;
      case OpRecord::State::kFailed:
        text += concat(": failed (", status_word(r.status), ") after ", duration_text(r.finished_ms - r.started_ms),
                       ", ", duration_text(now - r.finished_ms), " ago");
        break;
    }
    text += "\n";
  }
  return text.empty() ? "  (no collective yet)\n" : text;
}

}  // namespace tutti::health
