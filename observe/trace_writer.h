// Writing a trace as the runtime's writer does (one event per line), so that a merged
// file reads, greps and diffs like the per-rank ones.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace tutti::observe {

// trace: {"traceEvents":[...], ...the other members}, each written after the events.
std::string trace_text(const nlohmann::ordered_json& trace);

// Throws std::runtime_error naming the file when it cannot be written.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace tutti::observe
