// The launcher's stdout or stderr, written a batch of whole lines at a time.
#pragma once

#include <string_view>

namespace tutti::launcher {

class OutputWriter {
 public:
  explicit OutputWriter(int fd) : fd_(fd) {}

  // Writes all of data, waiting while the descriptor is full (it may be non-blocking,
  // as inherited). When the reader has gone (EPIPE) or the descriptor fails, says so
  // once on stderr and drops this and all later output: the ranks keep running, as
  // they would writing to a file.
  void write(std::string_view data);

 private:
  int fd_;
  bool broken_ = false;
};

}  // namespace tutti::launcher
