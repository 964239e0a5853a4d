#include "repl/rank_output.h"

#include <map>
#include <string_view>

#include "bindings/picture/picture.h"
#include "launcher/rank_list.h"

namespace tutti::repl {
namespace {

// Stands for a rank's own number where a message names the rank it comes from: in
// "tutti: rank <r> of" (an error's origin) and "(rank <r> of" (a communicator's
// description). Messages that differ only there ("tutti: rank 1 of 4: ...", "tutti:
// rank 3 of 4: ...") fold into one group, which shows its ranks there ("[1,3] tutti:
// rank 1,3 of 4: ..."); other mentions of ranks are text like any other.
constexpr char kOwnRank = '\x01';

std::string with_own_rank_marked(const std::string& output, size_t rank) {
  std::string marked = output;
  const std::string number = std::to_string(rank);
  for (const char* lead : {"tutti: rank ", "(rank "}) {
    const std::string mention = lead + number + " of ";
    for (size_t at = 0; (at = marked.find(mention, at)) != std::string::npos;) {
      marked.replace(at + std::string_view(lead).size(), number.size(), 1, kOwnRank);
      at += mention.size() - number.size() + 1;
    }
  }
  return marked;
}

}  // namespace

std::string group_by_rank(const std::vector<std::string>& outputs) {
  // A group is keyed by its output (its own rank marked) and kept in the order of its
  // first rank.
  std::map<std::string, size_t> group_of;
  std::vector<std::vector<int>> members;
  std::vector<std::string> texts;
  for (size_t rank = 0; rank < outputs.size(); ++rank) {
    if (outputs[rank].empty()) continue;
    auto [found, added] = group_of.try_emplace(with_own_rank_marked(outputs[rank], rank), members.size());
    if (added) {
      members.emplace_back();
      texts.push_back(found->first);
    }
    members[found->second].push_back(static_cast<int>(rank));
  }
  std::string shown;
  for (size_t group = 0; group < members.size(); ++group) {
    const std::string ranks = launcher::rank_ranges(members[group], ",");
    std::string label = "[" + ranks + "] ";
    std::string unmarked;
    for (char c : texts[group]) {
      if (c == kOwnRank) {
        unmarked += ranks;
      } else {
        unmarked.push_back(c);
      }
    }
    std::string_view text = unmarked;
    while (!text.empty()) {
      size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      shown.append(label).append(line).push_back('\n');
      text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    }
  }
  return shown;
}

std::string pictures_side_by_side(const std::vector<std::vector<std::string>>& pictures) {
  std::string shown;
  for (size_t index = 0;; ++index) {
    std::vector<std::string> blocks;
    std::vector<std::string> titles;
    for (size_t rank = 0; rank < pictures.size(); ++rank) {
      if (index >= pictures[rank].size()) continue;
      blocks.push_back(pictures[rank][index]);
      titles.push_back("rank " + std::to_string(rank));
    }
    if (blocks.empty()) return shown;
    shown += picture::side_by_side(blocks, titles);
  }
}

}  // namespace tutti::repl
