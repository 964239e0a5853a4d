// What `tutti top` shows of a job: its communicators, what each rank is doing and for
// how long, when the store last heard from it, who was lost, and who the others wait
// for. Built from what the store knows (store/roster.h, store/loss_event.h) and drawn
// as text; no I/O here, so that a test can draw any state.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/store/loss_event.h"
#include "runtime/store/roster.h"

namespace tutti::observe {

struct GroupState {
  std::string prefix;                        // the communicator's keys in the store
  int size = 0;                              // its ranks; 0: unknown (the highest one seen + 1)
  std::vector<store::RosterEntry> members;   // as the store has them
  std::map<int64_t, store::LossEvent> lost;  // by rank
};

struct JobState {
  std::string title;   // "tutti launch pid 4242: 4 ranks of ./train (store 127.0.0.1:40123)"
  int64_t now_ms = 0;  // wall clock, ms since the epoch
  std::vector<GroupState> groups;
};

// "world", "split #1 (color 0) of world", "shrink #0 of world", from a group's prefix.
std::string group_name(const std::string& prefix);

// The whole view, one line per rank under each communicator, then the waits. ANSI
// colours when color is set.
std::string draw(const JobState& job, bool color);

// Ranks of one communicator waiting for others: those in a collective that some ranks
// have not reached, or blocked in a send or receive with a peer.
struct Wait {
  std::vector<int64_t> waiting;
  std::vector<int64_t> waited_for;
  // "all_reduce #42: ranks 0, 1, 3 wait for rank 2 (rank 2 is idle after all_reduce #41
  // for 5.3 s)"
  std::string text;
};
std::vector<Wait> waits(const GroupState& group, int64_t now_ms);

}  // namespace tutti::observe
