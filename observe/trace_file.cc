// The writer puts one event per line between `{"traceEvents":[` and
// `],"displayTimeUnit":"ms"}`, each line after the first event starting with ",". A
// process that dies stops anywhere, so a file is read whole when it parses, and else
// line by line, where only the last line may be cut off.
#include "observe/trace_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/concat.h"

namespace tutti::observe {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kOpening = R"({"traceEvents":[)";

std::string_view trimmed(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  return line.substr(first, line.find_last_not_of(" \t\r\n") - first + 1);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(concat("cannot read ", path.string(), ": no such file, or not readable"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A whole document: the object format, or the bare array Chrome also accepts.
bool read_whole(const std::string& text, TraceFile& file) {
  Json document = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_array()) {
    file.events = std::move(document);
    return true;
  }
  if (!document.is_object() || !document.contains("traceEvents") || !document["traceEvents"].is_array()) return false;
  file.events = std::move(document["traceEvents"]);
  if (document.contains("otherData")) file.other_data = std::move(document["otherData"]);
  return true;
}

void read_lines(const std::string& text, TraceFile& file) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line = trimmed(std::string_view(text).substr(start, end - start));
    if (!line.empty()) lines.push_back(line);
    start = end + 1;
  }
  const std::string name = file.path.string();
  if (lines.empty() || lines[0] != kOpening) {
    throw std::runtime_error(concat(name, " is not a trace file: it is not JSON, and its first line is not ", kOpening,
                                    " as a tutti trace's is"));
  }
  file.cut_short = true;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    const bool last = i + 1 == lines.size();
    if (line.front() == ']') {
      // Every event parsed one by one though the whole did not (a comma missing, say):
      // the events are what a reader needs, so the file is taken as complete.
      if (!last) throw std::runtime_error(concat(name, " line ", i + 1, ": the closing line is not the last one"));
      file.cut_short = false;
      break;
    }
    if (line.front() == ',') line.remove_prefix(1);
    Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (event.is_object()) {
      file.events.push_back(std::move(event));
    } else if (last) {
      file.partial_line_dropped = true;
    } else {
      throw std::runtime_error(concat(name, " line ", i + 1, " is not a JSON event: \"", line.substr(0, 60),
                                      line.size() > 60 ? "...\"" : "\"",
                                      "; only the last line of a trace may be broken (a process that died)"));
    }
  }
}

}  // namespace

TraceFile read_trace_file(const std::filesystem::path& path) {
  TraceFile file;
  file.path = path;
  const std::string text = read_text(path);
  if (!read_whole(text, file)) read_lines(text, file);
  return file;
}

}  // namespace tutti::observe
