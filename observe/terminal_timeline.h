// `tutti trace show`: a timeline drawn with characters. A time axis; one row per rank
// and track with each operation as a run of its letter (operation_style.h), "!" on the
// last column of one that failed or was left unfinished and "*" at an instant; the
// legend; the failures and instants with their times and messages; and each rank's
// busiest operations.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "observe/timeline.h"

namespace tutti::observe {

struct DrawOptions {
  int width = 100;                     // columns of the whole drawing, row labels included
  std::optional<std::set<int>> ranks;  // none: every rank
  std::optional<double> from_ms;       // none: the trace's start (0)
  std::optional<double> to_ms;         // none: its end
  bool colour = false;                 // ANSI colours
};

// The smallest width that leaves room for the row labels and a plot.
constexpr int kMinimumWidth = 40;

std::string draw_timeline(const Timeline& timeline, const DrawOptions& options);

}  // namespace tutti::observe
