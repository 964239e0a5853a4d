#include "observe/trace_writer.h"

#include <fstream>
#include <stdexcept>

#include "runtime/common/concat.h"

namespace tutti::observe {

std::string trace_text(const nlohmann::ordered_json& trace) {
  std::string text = "{\"traceEvents\":[\n";
  bool first = true;
  for (const auto& event : trace.at("traceEvents")) {
    text += first ? "" : ",";
    text += event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    text += '\n';
    first = false;
  }
  text += "]";
  for (const auto& [key, value] : trace.items()) {
    if (key != "traceEvents") text += concat(",", nlohmann::ordered_json(key).dump(), ":", value.dump());
  }
  text += "}\n";
  return text;
}

void write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    throw std::runtime_error(concat("cannot write ", path.string(), ": check the folder exists and is writable"));
}

}  // namespace tutti::observe
