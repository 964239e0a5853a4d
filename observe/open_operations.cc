#include "observe/open_operations.h"

#include <algorithm>
#include <map>
#include <utility>

#include "runtime/common/concat.h"

namespace tutti::observe {
namespace {

using Json = nlohmann::ordered_json;

std::string label_of(const Json& event) {
  std::string label = event.value("name", std::string("(unnamed)"));
  const Json* args = event.contains("args") ? &event["args"] : nullptr;
  if (args && args->is_object() && args->contains("seq")) label += concat(" #", (*args)["seq"].dump());
  return label;
}

Json closing_event(const Json& opening, const char* phase, double end_us) {
  Json closing = {{"ph", phase}, {"pid", opening.value("pid", 0)}, {"tid", opening.value("tid", 0)}, {"ts", end_us}};
  if (*phase == 'e') {
    closing["id"] = opening.value("id", Json());
    closing["name"] = opening.value("name", std::string());
    closing["cat"] = opening.value("cat", std::string());
  }
  closing["args"] = {{"status", "UNFINISHED"}};
  return closing;
}

}  // namespace

OpenOperations close_open_operations(Json& events, double end_us) {
  OpenOperations open;
  std::map<int64_t, std::vector<size_t>> nests;                   // tid -> indices of open B events
  std::map<std::pair<std::string, std::string>, size_t> pending;  // (cat, id) -> index of an open b
  Json kept = Json::array();
  for (auto& event : events) {
    const std::string phase = event.value("ph", std::string());
    const int64_t tid = event.value("tid", int64_t{0});
    if (phase == "E" && nests[tid].empty()) {
      ++open.stray_ends;
      continue;
    }
    kept.push_back(std::move(event));
    const size_t index = kept.size() - 1;
    if (phase == "B") nests[tid].push_back(index);
    if (phase == "E") nests[tid].pop_back();
    if (phase == "b" || phase == "e") {
      auto key = std::make_pair(kept[index].value("cat", std::string()), kept[index].value("id", Json()).dump());
      if (phase == "b") pending[key] = index;
      if (phase == "e") pending.erase(key);
    }
  }
  events = std::move(kept);

  std::vector<size_t> left_open;
  for (auto& [tid, nest] : nests) {
    for (auto index = nest.rbegin(); index != nest.rend(); ++index) {
      open.closing_events.push_back(closing_event(events[*index], "E", end_us));
      left_open.push_back(*index);
    }
  }
  for (auto& [key, index] : pending) {
    open.closing_events.push_back(closing_event(events[index], "e", end_us));
    left_open.push_back(index);
  }
  std::sort(left_open.begin(), left_open.end());
  for (size_t index : left_open) open.labels.push_back(label_of(events[index]));
  return open;
}

}  // namespace tutti::observe
