// Splits one output stream of a rank into lines and tags each with the rank, so that
// the launcher can write whole lines only: lines of different ranks then never mix
// mid-line on the launcher's stdout or stderr.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tutti::launcher {

class LinePrefixer {
 public:
  // Receives whole lines only, each as prefix + text + '\n', possibly several at once.
  using Sink = std::function<void(std::string_view lines)>;
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  // A line longer than max_line_bytes is passed on in pieces of max_line_bytes, each
  // prefixed and ended with '\n', so that at most max_line_bytes wait here per stream.
  LinePrefixer(std::string prefix, Sink sink, size_t max_line_bytes = kMaxLineBytes);

  // Passes on every line that data completes, in one call of the sink (none when data
  // completes no line); keeps the rest for later.
  void feed(std::string_view data);
  // Passes on a partial last line, with a '\n' added. Call at end of stream.
  void finish();

  size_t pending_bytes() const { return pending_.size(); }

 private:
  void append_line(std::string& out, std::string_view tail);

  std::string prefix_;
  Sink sink_;
  size_t max_line_bytes_;
  std::string pending_;  // the current line's start; never more than max_line_bytes_
};

}  // namespace tutti::launcher
