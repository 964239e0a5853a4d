#include "observe/timeline.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "runtime/common/concat.h"

namespace tutti::observe {
namespace {

using Json = nlohmann::ordered_json;
using TrackKey = std::pair<int, int64_t>;

std::string detail_of(const Json& args) {
  std::string text;
  if (!args.is_object()) return text;
  for (const auto& [key, value] : args.items()) {
    text += concat(text.empty() ? "" : ", ", key, "=", value.is_string() ? value.get<std::string>() : value.dump());
  }
  return text;
}

Span span_from(const Json& opening, double start_us) {
  Span span;
  span.start_us = start_us;
  span.end_us = start_us;
  span.name = opening.value("name", std::string("(unnamed)"));
  span.category = opening.value("cat", std::string());
  span.args = opening.contains("args") && opening["args"].is_object() ? opening["args"] : Json::object();
  span.label = span.name;
  if (span.args.contains("seq")) span.label += concat(" #", span.args["seq"].dump());
  span.style = &style_of(span.name, span.category);
  return span;
}

void close_span(Span& span, const Json& closing, double end_us) {
  span.end_us = std::max(span.start_us, end_us);
  if (closing.contains("args") && closing["args"].is_object()) {
    for (const auto& [key, value] : closing["args"].items()) span.args[key] = value;
  }
  if (span.args.contains("status") && span.args["status"].is_string()) span.status = span.args["status"];
  if (span.args.contains("error") && span.args["error"].is_string()) span.error = span.args["error"];
}

class Builder {
 public:
  void add(const Json& event) {
    const std::string phase = event.value("ph", std::string());
    const TrackKey key{event.value("pid", 0), event.value("tid", int64_t{0})};
    if (phase == "M") {
      if (event.value("name", std::string()) == "thread_name" && event.contains("args")) {
        names_[key] = event["args"].value("name", std::string());
      }
      return;
    }
    const double ts = event.value("ts", 0.0);
    timeline_.end_us = std::max(timeline_.end_us, ts);
    if (phase == "B") {
      auto& nest = nests_[key];
      nest.push_back(span_from(event, ts));
      nest.back().depth = static_cast<int>(nest.size()) - 1;
    } else if (phase == "E") {
      auto& nest = nests_[key];
      if (nest.empty()) return;
      close_span(nest.back(), event, ts);
      finish(key, std::move(nest.back()));
      nest.pop_back();
    } else if (phase == "X") {
      Span span = span_from(event, ts);
      close_span(span, event, ts + event.value("dur", 0.0));
      timeline_.end_us = std::max(timeline_.end_us, span.end_us);
      span.depth = static_cast<int>(nests_[key].size());
      finish(key, std::move(span));
    } else if (phase == "b") {
      pending_[pending_key(event)] = {key, span_from(event, ts)};
    } else if (phase == "e") {
      auto found = pending_.find(pending_key(event));
      if (found == pending_.end()) return;
      close_span(found->second.second, event, ts);
      finish(found->second.first, std::move(found->second.second));
      pending_.erase(found);
    } else if (phase == "i" || phase == "I") {
      Json args = event.contains("args") ? event["args"] : Json::object();
      instants_.emplace_back(key, Instant{0, ts, event.value("name", std::string()), event.value("cat", std::string()),
                                          detail_of(args), args});
    }
  }

  Timeline finish_all() {
    for (auto& [key, nest] : nests_) {
      for (auto& span : nest) finish_unclosed(key, std::move(span));
    }
    for (auto& [id, pending] : pending_) finish_unclosed(pending.first, std::move(pending.second));
    std::map<TrackKey, size_t> index;
    for (auto& [key, name] : names_) index.emplace(key, 0);
    for (auto& [key, span] : spans_) index.emplace(key, 0);
    for (auto& [key, instant] : instants_) index.emplace(key, 0);
    for (auto& [key, at] : index) {
      at = timeline_.tracks.size();
      auto name = names_.find(key);
      timeline_.tracks.push_back({key.first, key.second,
                                  name != names_.end() ? name->second
                                  : key.second == 0    ? std::string("control")
                                                       : concat("track ", key.second)});
    }
    for (auto& [key, span] : spans_) {
      span.track = index[key];
      timeline_.spans.push_back(std::move(span));
    }
    for (auto& [key, instant] : instants_) {
      instant.track = index[key];
      timeline_.instants.push_back(std::move(instant));
    }
    std::stable_sort(timeline_.spans.begin(), timeline_.spans.end(),
                     [](const Span& a, const Span& b) { return a.start_us < b.start_us; });
    return std::move(timeline_);
  }

 private:
  using PendingKey = std::tuple<int, std::string, std::string>;
  static PendingKey pending_key(const Json& event) {
    return {event.value("pid", 0), event.value("cat", std::string()), event.value("id", Json()).dump()};
  }

  void finish(const TrackKey& key, Span span) { spans_.emplace_back(key, std::move(span)); }

  // A span never closed (in a trace that was not merged, which closes them) ends with
  // the trace.
  void finish_unclosed(const TrackKey& key, Span span) {
    span.end_us = std::max(span.start_us, timeline_.end_us);
    if (span.status.empty()) span.status = "UNFINISHED";
    finish(key, std::move(span));
  }

  Timeline timeline_;
  std::map<TrackKey, std::string> names_;
  std::map<TrackKey, std::vector<Span>> nests_;
  std::map<PendingKey, std::pair<TrackKey, Span>> pending_;
  std::vector<std::pair<TrackKey, Span>> spans_;
  std::vector<std::pair<TrackKey, Instant>> instants_;
};

}  // namespace

Timeline build_timeline(const Json& events) {
  Builder builder;
  for (const auto& event : events) builder.add(event);
  return builder.finish_all();
}

}  // namespace tutti::observe
