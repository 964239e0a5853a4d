#include "observe/terminal_timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "runtime/common/concat.h"

namespace tutti::observe {
namespace {

constexpr size_t kMaxLabelWidth = 24;
constexpr int kMinTickSpacing = 12;  // columns between the axis's marks, at least
constexpr size_t kBusiestShown = 3;
constexpr int kFailureColour = 91;
constexpr int kInstantColour = 93;

struct Cell {
  char letter = ' ';
  int colour = 0;
};

struct Window {
  double from_us;
  double to_us;
  int columns;
  double column_us() const { return (to_us - from_us) / columns; }
  // The column holding t; -1 before the window, columns after it.
  int column_of(double t) const {
    if (t < from_us) return -1;
    if (t >= to_us) return t == to_us ? columns - 1 : columns;
    return std::min(columns - 1, static_cast<int>((t - from_us) / column_us()));
  }
};

std::string ms_text(double us, int decimals = 3) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, us / 1000.0);
  return text;
}

std::string painted(const std::string& text, int colour, bool enabled) {
  if (!enabled || colour == 0) return text;
  return concat("\x1b[", colour, "m", text, "\x1b[0m");
}

std::string row_text(const std::vector<Cell>& cells, bool colour) {
  std::string text;
  for (size_t i = 0; i < cells.size();) {
    size_t end = i;
    while (end < cells.size() && cells[end].colour == cells[i].colour) ++end;
    std::string run;
    for (size_t j = i; j < end; ++j) run += cells[j].letter;
    text += painted(run, cells[i].colour, colour);
    i = end;
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string track_label(const Track& track) {
  std::string label = concat("rank ", track.rank, " ", track.name);
  return label.size() > kMaxLabelWidth ? label.substr(0, kMaxLabelWidth) : label;
}

std::string padded(std::string text, size_t width) {
  text.resize(std::max(width, text.size()), ' ');
  return text;
}

// 1, 2 or 5 times a power of ten, at least minimum.
double nice_step(double minimum) {
  const double power = std::pow(10.0, std::floor(std::log10(minimum)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= minimum) return factor * power;
  }
  return 10 * power;
}

std::string axis(const Window& window, size_t label_width) {
  const double step_us = nice_step(window.column_us() * kMinTickSpacing);
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step_us / 1000.0))));
  std::string numbers(window.columns + 16, ' '), marks(window.columns, '-');
  for (double t = std::ceil(window.from_us / step_us) * step_us; t <= window.to_us; t += step_us) {
    const int column = window.column_of(t);
    if (column < 0 || column >= window.columns) continue;
    marks[column] = '+';
    const std::string number = ms_text(t, decimals);
    numbers.replace(column, number.size(), number);
  }
  while (!numbers.empty() && numbers.back() == ' ') numbers.pop_back();
  return concat(padded("ms", label_width), " ", numbers, "\n", std::string(label_width, ' '), " ", marks, "\n");
}

bool shown(const DrawOptions& options, int rank) { return !options.ranks || options.ranks->count(rank) > 0; }

void draw_rows(const Timeline& timeline, const DrawOptions& options, const Window& window, size_t label_width,
               std::string& out) {
  std::vector<std::vector<Cell>> rows(timeline.tracks.size(), std::vector<Cell>(window.columns));
  // Outer spans first, so that what runs inside them shows over them.
  std::vector<const Span*> spans;
  for (const auto& span : timeline.spans) spans.push_back(&span);
  std::stable_sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) { return a->depth < b->depth; });
  for (const Span* span : spans) {
    if (span->end_us < window.from_us || span->start_us > window.to_us) continue;
    const int first = std::max(0, window.column_of(span->start_us));
    const int last = std::min(window.columns - 1, window.column_of(span->end_us));
    auto& row = rows[span->track];
    for (int column = first; column <= last; ++column) row[column] = {span->style->letter, span->style->ansi};
    if (span->failed() && window.column_of(span->end_us) <= last) row[last] = {'!', kFailureColour};
  }
  for (const auto& instant : timeline.instants) {
    const int column = window.column_of(instant.ts_us);
    if (column >= 0 && column < window.columns) rows[instant.track][column] = {'*', kInstantColour};
  }
  for (size_t i = 0; i < timeline.tracks.size(); ++i) {
    if (!shown(options, timeline.tracks[i].rank)) continue;
    std::string line =
        concat(padded(track_label(timeline.tracks[i]), label_width), " ", row_text(rows[i], options.colour));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
}

// Entries are wrapped at the drawing's width, counting what shows (not the colours).
void draw_legend(const Timeline& timeline, const DrawOptions& options, std::string& out) {
  std::vector<std::pair<std::string, std::string>> entries;  // what shows, and what is written
  auto add = [&](char letter, int colour, const std::string& meaning) {
    entries.emplace_back(concat(letter, " ", meaning),
                         concat(painted(std::string(1, letter), colour, options.colour), " ", meaning));
  };
  for (const auto& style : operation_styles()) {
    const bool used = std::any_of(timeline.spans.begin(), timeline.spans.end(), [&](const Span& span) {
      return span.style == &style && shown(options, timeline.tracks[span.track].rank);
    });
    if (used) add(style.letter, style.ansi, style.name);
  }
  add('!', kFailureColour, "failed or unfinished (its last column)");
  add('*', kInstantColour, "instant");
  const std::string indent(8, ' ');
  std::string line = "legend:";
  size_t shown_width = line.size();
  for (const auto& [visible, written] : entries) {
    if (shown_width > indent.size() && shown_width + 2 + visible.size() > static_cast<size_t>(options.width)) {
      out += line + "\n";
      line = indent.substr(2);
      shown_width = line.size();
    }
    line += "  " + written;
    shown_width += 2 + visible.size();
  }
  out += line + "\n";
}

void list_events(const Timeline& timeline, const DrawOptions& options, const Window& window, std::string& out) {
  std::vector<std::pair<double, std::string>> lines;
  auto where = [&](size_t track) {
    return concat("rank ", timeline.tracks[track].rank, " ", timeline.tracks[track].name);
  };
  for (const auto& span : timeline.spans) {
    if (!span.failed() || !shown(options, timeline.tracks[span.track].rank)) continue;
    if (span.end_us < window.from_us || span.end_us > window.to_us) continue;
    lines.emplace_back(span.end_us, concat(where(span.track), ": ", span.label, " ", span.status,
                                           span.error.empty() ? "" : ": ", span.error));
  }
  for (const auto& instant : timeline.instants) {
    if (!shown(options, timeline.tracks[instant.track].rank)) continue;
    if (instant.ts_us < window.from_us || instant.ts_us > window.to_us) continue;
    lines.emplace_back(instant.ts_us,
                       concat(where(instant.track), ": ", instant.name, instant.detail.empty() ? "" : " (",
                              instant.detail, instant.detail.empty() ? "" : ")"));
  }
  std::stable_sort(lines.begin(), lines.end(), [](auto& a, auto& b) { return a.first < b.first; });
  out += lines.empty() ? "failures and instants: none\n" : "failures and instants:\n";
  for (const auto& [t, text] : lines) {
    char time[32];
    std::snprintf(time, sizeof time, "%10.3f ms  ", t / 1000.0);
    out += time + text + "\n";
  }
}

void list_busiest(const Timeline& timeline, const DrawOptions& options, const Window& window, std::string& out) {
  struct Load {
    size_t count = 0;
    double total_us = 0;
  };
  std::map<int, std::map<std::string, Load>> loads;
  for (const auto& span : timeline.spans) {
    const int rank = timeline.tracks[span.track].rank;
    if (!shown(options, rank) || span.start_us < window.from_us || span.start_us > window.to_us) continue;
    Load& load = loads[rank][span.name];
    ++load.count;
    load.total_us += span.end_us - span.start_us;
  }
  out += "busiest operations (count, total time):\n";
  for (const auto& [rank, by_name] : loads) {
    std::vector<std::pair<std::string, Load>> sorted(by_name.begin(), by_name.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](auto& a, auto& b) { return a.second.total_us > b.second.total_us; });
    std::string line = concat("  rank ", rank, ":");
    for (size_t i = 0; i < sorted.size() && i < kBusiestShown; ++i) {
      line += concat(i ? "," : "", " ", sorted[i].first, " ", sorted[i].second.count, " x ",
                     ms_text(sorted[i].second.total_us), " ms");
    }
    out += line + "\n";
  }
}

}  // namespace

std::string draw_timeline(const Timeline& timeline, const DrawOptions& options) {
  size_t label_width = 0;
  std::set<int> ranks;
  for (const auto& track : timeline.tracks) {
    if (!shown(options, track.rank)) continue;
    label_width = std::max(label_width, track_label(track).size());
    ranks.insert(track.rank);
  }
  Window window{options.from_ms.value_or(0) * 1000, options.to_ms ? *options.to_ms * 1000 : timeline.end_us,
                std::max(10, options.width - static_cast<int>(label_width) - 1)};
  if (window.to_us <= window.from_us) window.to_us = window.from_us + 1;

  std::string out = concat(ranks.size(), ranks.size() == 1 ? " rank" : " ranks", ", ", ms_text(window.from_us), " to ",
                           ms_text(window.to_us), " ms, one column = ", ms_text(window.column_us()), " ms\n");
  out += axis(window, label_width);
  draw_rows(timeline, options, window, label_width, out);
  out += "\n";
  draw_legend(timeline, options, out);
  out += "\n";
  list_events(timeline, options, window, out);
  out += "\n";
  list_busiest(timeline, options, window, out);
  return out;
}

}  // namespace tutti::observe
