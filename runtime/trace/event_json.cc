#include "runtime/trace/event_json.h"

#include <cinttypes>
#include <cstdio>

#include "runtime/common/status.h"

namespace tutti::trace {
namespace {

void append_number(const char* name, int64_t value, bool* first, std::string* out) {
  char text[64];
  std::snprintf(text, sizeof text, "%s\"%s\":%" PRId64, *first ? "" : ",", name, value);
  *out += text;
  *first = false;
}

void append_text(const char* name, const char* value, bool* first, std::string* out) {
  *out += *first ? "\"" : ",\"";
  *out += name;
  *out += "\":";
  append_json_string(value, out);
  *first = false;
}

}  // namespace

void append_json_string(const std::string& text, std::string* out) {
  out->push_back('"');
  for (unsigned char c : text) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      case '\r': *out += "\\r"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          *out += escaped;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

void append_json(const Event& event, int pid, double ts_us, double length_us, const std::string& text,
                 std::string* out) {
  char head[160];
  int n = std::snprintf(head, sizeof head, "{\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f",
                        static_cast<char>(event.phase), pid, event.track, ts_us);
  out->append(head, static_cast<size_t>(n));
  if (event.phase == Phase::kComplete) {
    n = std::snprintf(head, sizeof head, ",\"dur\":%.3f", length_us < 0 ? 0.0 : length_us);
    out->append(head, static_cast<size_t>(n));
  }
  if (event.phase != Phase::kEnd) {
    *out += ",\"name\":";
    append_json_string(event.name, out);
  }
  if (event.phase == Phase::kAsyncBegin || event.phase == Phase::kAsyncEnd) {
    // b/e pairs match on cat and id (an e repeats its b's name, for viewers).
    n = std::snprintf(head, sizeof head, ",\"id\":\"0x%" PRIx64 "\"", static_cast<uint64_t>(event.id));
    out->append(head, static_cast<size_t>(n));
  }
  if (*event.cat != '\0') {
    *out += ",\"cat\":";
    append_json_string(event.cat, out);
  }
  if (event.phase == Phase::kInstant) *out += ",\"s\":\"t\"";
  *out += ",\"args\":{";
  bool first = true;
  if (event.seq >= 0) append_number("seq", event.seq, &first, out);
  if (event.bytes >= 0) append_number("bytes", event.bytes, &first, out);
  if (event.count >= 0) append_number("count", event.count, &first, out);
  if (event.dtype) append_text("dtype", event.dtype, &first, out);
  if (event.op) append_text("op", event.op, &first, out);
  if (event.root >= 0) append_number("root", event.root, &first, out);
  if (event.peer >= 0) append_number("peer", event.peer, &first, out);
  if (event.tag >= 0) append_number("tag", event.tag, &first, out);
  if (event.algorithm) append_text("algorithm", event.algorithm, &first, out);
  if (event.transport) append_text("transport", event.transport, &first, out);
  if (event.has_status) append_text("status", status_word(event.status), &first, out);
  if (!text.empty()) {
    const bool failed = event.has_status && event.status != Status::kOk;
    append_text(failed ? "error" : "detail", text.c_str(), &first, out);
  }
  *out += "}}";
}

}  // namespace tutti::trace
