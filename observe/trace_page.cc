#include "observe/trace_page.h"

#include <stdexcept>
#include <string_view>

#include "observe/operation_style.h"
#include "observe/trace_page_template.h"

namespace tutti::observe {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kDataMark = "/*TUTTI_TRACE_DATA*/";

Json timeline_json(const Timeline& timeline, const std::string& title) {
  const auto styles = operation_styles();
  Json kinds = Json::array(), tracks = Json::array(), spans = Json::array(), instants = Json::array();
  for (const auto& style : styles) kinds.push_back({{"name", style.name}, {"colour", style.colour}});
  for (const auto& track : timeline.tracks) tracks.push_back({{"rank", track.rank}, {"name", track.name}});
  for (const auto& span : timeline.spans) {
    spans.push_back({{"track", span.track},
                     {"start", span.start_us},
                     {"end", span.end_us},
                     {"depth", span.depth},
                     {"kind", span.style - styles.data()},
                     {"label", span.label},
                     {"status", span.status},
                     {"failed", span.failed()},
                     {"args", span.args}});
  }
  for (const auto& instant : timeline.instants) {
    instants.push_back(
        {{"track", instant.track}, {"ts", instant.ts_us}, {"name", instant.name}, {"args", instant.args}});
  }
  return {{"title", title}, {"end_us", timeline.end_us}, {"kinds", kinds}, {"tracks", tracks},
          {"spans", spans}, {"instants", instants}};
}

// JSON inside a <script> element must not hold "</script>" or "<!--"; "<" occurs only
// inside JSON strings, where \u003c means the same.
std::string script_safe(const std::string& json) {
  std::string safe;
  safe.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  return safe;
}

}  // namespace

std::string trace_page(const Timeline& timeline, const std::string& title) {
  std::string page(kTracePageTemplate);
  const size_t mark = page.find(kDataMark);
  if (mark == std::string::npos) throw std::logic_error("observe/trace_page.html lost its /*TUTTI_TRACE_DATA*/ mark");
  const std::string data =
      timeline_json(timeline, title).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  page.replace(mark, kDataMark.size(), script_safe(data));
  return page;
}

}  // namespace tutti::observe
