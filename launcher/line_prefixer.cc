#include "launcher/line_prefixer.h"

#include <algorithm>
#include <utility>

namespace tutti::launcher {

LinePrefixer::LinePrefixer(std::string prefix, Sink sink, size_t max_line_bytes)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), max_line_bytes_(std::max<size_t>(max_line_bytes, 1)) {}

void LinePrefixer::append_line(std::string& out, std::string_view tail) {
  out.append(prefix_);
  out.append(pending_);
  out.append(tail);
  out.push_back('\n');
  pending_.clear();
}

void LinePrefixer::feed(std::string_view data) {
  std::string out;
  while (!data.empty()) {
    if (pending_.size() == max_line_bytes_) {
      // A full piece is passed on only once the next byte is known, so that a line of
      // exactly max_line_bytes does not come out as a piece and an empty line.
      if (data.front() == '\n') {
        append_line(out, {});
        data.remove_prefix(1);
        continue;
      }
      append_line(out, {});
    }
    size_t room = max_line_bytes_ - pending_.size();
    // A newline within room + 1 bytes ends a line that fits.
    size_t newline = data.substr(0, room + 1).find('\n');
    if (newline != std::string_view::npos) {
      append_line(out, data.substr(0, newline));
      data.remove_prefix(newline + 1);
    } else {
      size_t take = std::min(room, data.size());
      pending_.append(data.substr(0, take));
      data.remove_prefix(take);
    }
  }
  if (!out.empty()) sink_(out);
}

void LinePrefixer::finish() {
  if (pending_.empty()) return;
  std::string out;
  append_line(out, {});
  sink_(out);
}

}  // namespace tutti::launcher
