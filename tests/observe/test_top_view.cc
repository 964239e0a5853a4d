// What `tutti top` draws of a job's state (observe/top_view.h), for states the test
// makes up: communicator names from their prefixes, who waits for whom in a collective
// and in a blocking receive, lost ranks and ranks not there.
#include <criterion/criterion.h>

#include <string>

#include "observe/top_view.h"
#include "runtime/health/activity_board.h"

using tutti::observe::draw;
using tutti::observe::group_name;
using tutti::observe::GroupState;
using tutti::observe::JobState;
using tutti::observe::waits;
using tutti::store::LossEvent;
using tutti::store::RosterEntry;

namespace {

constexpr int64_t kNow = 1700000010000;

// What the activity board reports: collective `seq`, running or done since since_ms,
// perhaps blocked in a send or receive ("recv/0/99").
std::string doing(uint32_t seq, bool running, int64_t since_ms, const char* name, const char* waiting = "") {
  tutti::health::Activity activity;
  activity.seq = seq;
  activity.running = running;
  activity.since_ms = since_ms;
  activity.name = name;
  activity.waiting = waiting;
  return tutti::health::encode(activity);
}

RosterEntry member(int64_t rank, const std::string& activity, int64_t silent_ms = 300) {
  RosterEntry entry;
  entry.prefix = "world.0/";
  entry.rank = rank;
  entry.identity = "h:" + std::to_string(100 + rank);
  entry.silent_ms = silent_ms;
  entry.timeout_ms = 10000;
  entry.activity = activity;
  return entry;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

Test(top_view, communicators_are_named_from_their_prefixes) {
  cr_assert_eq(group_name("world.0/"), "world");
  cr_assert_eq(group_name("world.2/"), "world (generation 2)");
  cr_assert_eq(group_name("world.0/split.1/color.0/"), "split #1 (color 0) of world");
  cr_assert_eq(group_name("world.0/shrink.0/comm/"), "shrink #0 of world");
  cr_assert_eq(group_name("world.0/split.0/color.3/split.2/color.1/"),
               "split #2 (color 1) of split #0 (color 3) of world");
}

Test(top_view, ranks_in_a_collective_wait_for_those_behind) {
  GroupState group;
  group.prefix = "world.0/";
  group.size = 4;
  group.members = {
      member(0, doing(42, true, 1700000005000, "all_reduce")), member(1, doing(42, true, 1700000005000, "all_reduce")),
      member(2, doing(41, false, 1700000004700, "broadcast")), member(3, doing(42, true, 1700000005000, "all_reduce"))};
  auto found = waits(group, kNow);
  cr_assert_eq(found.size(), 1u);
  cr_assert_eq(found[0].waiting, (std::vector<int64_t>{0, 1, 3}));
  cr_assert_eq(found[0].waited_for, (std::vector<int64_t>{2}));
  cr_assert(contains(found[0].text,
                     "all_reduce #42: ranks 0, 1, 3 wait for rank 2 (rank 2 is idle after broadcast "
                     "#41 for 5.3 s)"),
            "%s", found[0].text.c_str());

  JobState job{"a job", kNow, {group}};
  std::string view = draw(job, false);
  cr_assert(contains(view, "world: 4 ranks"), "%s", view.c_str());
  cr_assert(contains(view, "h:102"), "%s", view.c_str());
  cr_assert(contains(view, "300 ms ago"), "%s", view.c_str());
  cr_assert(contains(view, "waiting: all_reduce #42"), "%s", view.c_str());
  cr_assert(!contains(view, "\033["), "no colour unless asked");
  cr_assert(contains(draw(job, true), "\033["), "colour when asked");
}

Test(top_view, lost_and_absent_ranks_are_named_as_such) {
  GroupState group;
  group.prefix = "world.0/";
  group.size = 4;
  group.members = {member(0, doing(3, true, 1700000009000, "barrier")),
                   member(1, doing(3, true, 1700000009000, "barrier"))};
  LossEvent lost;
  lost.rank = 2;
  lost.identity = "h:102";
  lost.reason = "its connection to the store closed";
  group.lost[2] = lost;
  auto found = waits(group, kNow);
  cr_assert_eq(found.size(), 1u);
  cr_assert(contains(found[0].text, "wait for ranks 2, 3 (rank 2 is lost; rank 3 is not here)"), "%s",
            found[0].text.c_str());
  std::string view = draw(JobState{"a job", kNow, {group}}, false);
  cr_assert(contains(view, "lost: its connection to the store closed"), "%s", view.c_str());
  cr_assert(contains(view, "not here"), "%s", view.c_str());
}

Test(top_view, a_blocking_receive_waits_for_its_peer) {
  GroupState group;
  group.prefix = "world.0/";
  group.size = 2;
  group.members = {member(0, doing(5, false, 1700000008000, "all_reduce")),
                   member(1, doing(5, false, 1700000009500, "all_reduce", "recv/0/99"))};
  auto found = waits(group, kNow);
  cr_assert_eq(found.size(), 1u);
  cr_assert(contains(found[0].text,
                     "rank 1 waits in recv from rank 0 (tag 99) for 500 ms; rank 0 is idle after all_reduce #5"),
            "%s", found[0].text.c_str());
}

Test(top_view, nobody_waits_when_every_rank_is_in_the_same_collective) {
  GroupState group;
  group.prefix = "world.0/";
  group.size = 2;
  group.members = {member(0, doing(7, true, 1700000009000, "all_gather")),
                   member(1, doing(7, true, 1700000009000, "all_gather"))};
  cr_assert(waits(group, kNow).empty());
  // A rank's meeting connection is a member too, without activity: one row per rank.
  group.members.push_back(member(1, "", 5000));
  std::string view = draw(JobState{"a job", kNow, {group}}, false);
  cr_assert(!contains(view, "no report yet"), "%s", view.c_str());
}
