#include "observe/top_view.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "runtime/common/concat.h"
#include "runtime/common/duration_text.h"
#include "runtime/health/activity_board.h"

namespace tutti::observe {
namespace {

constexpr const char* kRed = "\033[31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kPlain = "\033[0m";

// One record per rank: a rank's meeting connection and its failure detector's are both
// members of its communicator; the one that reports what it does is the one to show.
std::map<int64_t, store::RosterEntry> by_rank(const GroupState& group) {
  std::map<int64_t, store::RosterEntry> ranks;
  for (const auto& member : group.members) {
    auto [it, added] = ranks.emplace(member.rank, member);
    bool better = !member.activity.empty() && (it->second.activity.empty() || member.silent_ms < it->second.silent_ms);
    if (!added && better) it->second = member;
  }
  return ranks;
}

int group_size(const GroupState& group, const std::map<int64_t, store::RosterEntry>& ranks) {
  int64_t highest = -1;
  if (!ranks.empty()) highest = ranks.rbegin()->first;
  if (!group.lost.empty()) highest = std::max(highest, group.lost.rbegin()->first);
  return group.size > 0 ? group.size : static_cast<int>(highest + 1);
}

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 16) return concat(text, " and ", ranks.size() - i, " more");
    text += concat(i ? ", " : "", ranks[i]);
  }
  return text;
}

std::string for_how_long(const health::Activity& activity, int64_t now_ms) {
  return duration_text(std::max<int64_t>(0, now_ms - activity.since_ms));
}

}  // namespace

std::string group_name(const std::string& prefix) {
  std::string name, part;
  std::istringstream parts(prefix);
  std::vector<std::string> steps;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    unsigned number = 0;
    if (sscanf(part.c_str(), "world.%u", &number) == 1) {
      name = number == 0 ? "world" : concat("world (generation ", number, ")");
    } else if (sscanf(part.c_str(), "split.%u", &number) == 1) {
      steps.push_back(concat("split #", number));
    } else if (sscanf(part.c_str(), "color.%u", &number) == 1 && !steps.empty()) {
      steps.back() += concat(" (color ", number, ")");
    } else if (sscanf(part.c_str(), "shrink.%u", &number) == 1) {
      steps.push_back(concat("shrink #", number));
    } else if (part != "comm") {
      steps.push_back(part);
    }
  }
  for (const auto& step : steps) name = concat(step, " of ", name);
  return name.empty() ? prefix : name;
}

std::vector<Wait> waits(const GroupState& group, int64_t now_ms) {
  auto ranks = by_rank(group);
  const int size = group_size(group, ranks);
  std::map<int64_t, health::Activity> doing;
  for (const auto& [rank, member] : ranks) {
    if (auto activity = health::decode_activity(member.activity)) doing[rank] = *activity;
  }
  std::vector<Wait> found;
  // A collective in which some ranks are and others have not arrived yet.
  uint32_t newest = 0;
  for (const auto& [rank, activity] : doing) {
    if (activity.running && activity.waiting.empty()) newest = std::max(newest, activity.seq);
  }
  if (newest > 0) {
    std::vector<int64_t> in, behind;
    std::string name;
    for (int64_t rank = 0; rank < size; ++rank) {
      auto it = doing.find(rank);
      if (it != doing.end() && it->second.seq == newest && it->second.running) {
        in.push_back(rank);
        name = it->second.name;
      } else if (it == doing.end() || it->second.seq < newest) {
        behind.push_back(rank);
      }
    }
    if (!behind.empty()) {
      std::string why;
      for (size_t i = 0; i < behind.size() && i < 4; ++i) {
        int64_t rank = behind[i];
        std::string where;
        if (group.lost.count(rank)) {
          where = "lost";
        } else if (auto it = doing.find(rank); it != doing.end()) {
          where = concat(health::describe(it->second), " for ", for_how_long(it->second, now_ms));
        } else {
          where = ranks.count(rank) ? "no report yet" : "not here";
        }
        why += concat(i ? "; " : "", "rank ", rank, " is ", where);
      }
      found.push_back({in, behind,
                       concat(name, " #", newest, ": ", rank_list(in), in.size() == 1 ? " waits" : " wait", " for ",
                              rank_list(behind), " (", why, behind.size() > 4 ? "; ..." : "", ")")});
    }
  }
  // Blocking sends and receives, each waiting on one peer.
  for (const auto& [rank, activity] : doing) {
    char kind[8] = {0};
    int peer = 0, tag = 0;
    if (sscanf(activity.waiting.c_str(), "%7[a-z]/%d/%d", kind, &peer, &tag) != 3) continue;
    std::string peer_state = group.lost.count(peer) ? "lost" : "not here";
    if (auto it = doing.find(peer); it != doing.end()) peer_state = health::describe(it->second);
    found.push_back(
        {{rank},
         {peer},
         concat("rank ", rank, " waits in ", kind, std::string_view(kind) == "recv" ? " from" : " to", " rank ", peer,
                " (tag ", tag, ") for ", for_how_long(activity, now_ms), "; rank ", peer, " is ", peer_state)});
  }
  return found;
}

std::string draw(const JobState& job, bool color) {
  auto paint = [&](const char* code, const std::string& text) { return color ? concat(code, text, kPlain) : text; };
  std::string out = concat(paint(kBold, job.title), "\n");
  if (job.groups.empty()) out += "no communicator yet: the ranks have not finished init\n";
  for (const auto& group : job.groups) {
    auto ranks = by_rank(group);
    const int size = group_size(group, ranks);
    out +=
        concat("\n", paint(kBold, concat(group_name(group.prefix), ": ", size, size == 1 ? " rank" : " ranks")), "\n");
    char header[160];
    std::snprintf(header, sizeof header, "%5s  %-24s %-44s %9s  %s\n", "rank", "process", "doing", "for", "heard from");
    out += header;
    std::vector<Wait> group_waits = waits(group, job.now_ms);
    std::set<int64_t> waited_for;
    for (const auto& wait : group_waits) waited_for.insert(wait.waited_for.begin(), wait.waited_for.end());
    for (int64_t rank = 0; rank < size; ++rank) {
      char row[512];
      if (auto lost = group.lost.find(rank); lost != group.lost.end()) {
        std::snprintf(row, sizeof row, "%5lld  %-24s lost: %s\n", static_cast<long long>(rank),
                      lost->second.identity.c_str(), lost->second.reason.c_str());
        out += paint(kRed, row);
        continue;
      }
      auto member = ranks.find(rank);
      if (member == ranks.end()) {
        std::snprintf(row, sizeof row, "%5lld  %-24s %s\n", static_cast<long long>(rank), "-",
                      "not here (not arrived yet, or left)");
        out += row;
        continue;
      }
      auto activity = health::decode_activity(member->second.activity);
      std::string doing = activity ? health::describe(*activity) : "no report yet";
      std::string since = activity ? for_how_long(*activity, job.now_ms) : "-";
      std::string heard = concat(duration_text(member->second.silent_ms), " ago");
      if (member->second.timeout_ms == 0) heard += " (not watched: leaving)";
      std::snprintf(row, sizeof row, "%5lld  %-24s %-44s %9s  %s\n", static_cast<long long>(rank),
                    member->second.identity.c_str(), doing.c_str(), since.c_str(), heard.c_str());
      out += waited_for.count(rank) ? paint(kYellow, row) : std::string(row);
    }
    for (const auto& wait : group_waits) out += concat(paint(kYellow, "waiting: "), wait.text, "\n");
  }
  return out;
}

}  // namespace tutti::observe
