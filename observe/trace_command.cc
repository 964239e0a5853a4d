#include "observe/trace_command.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <optional>
#include <stdexcept>

#include "observe/terminal_timeline.h"
#include "observe/timeline.h"
#include "observe/trace_file.h"
#include "observe/trace_merge.h"
#include "observe/trace_page.h"
#include "observe/trace_writer.h"
#include "runtime/common/concat.h"

namespace tutti::observe {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kDefaultWidth = 100;
constexpr int kMaxWidth = 1000;

constexpr const char* kUsage =
    "usage: tutti trace merge DIR [-o FILE]\n"
    "       tutti trace show FILE [--width N] [--ranks LIST] [--from MS] [--to MS]\n"
    "       tutti trace html FILE [-o PAGE.html]\n"
    "\n"
    "Offline tools for the trace files a job writes with TUTTI_TRACE=DIR (docs/trace.md).\n"
    "\n"
    "  merge DIR    aligns the clocks of DIR/rank-*.json and writes one Chrome trace, by\n"
    "               default DIR/timeline.json (open it in Perfetto or chrome://tracing);\n"
    "               names each file that was cut short and what its rank left open\n"
    "    -o FILE    where to write it\n"
    "  show FILE    draws the timeline of a merged trace, or of one rank's file, in the\n"
    "               terminal: a row per rank and communicator, a letter per operation\n"
    "               (the legend follows), the failures, and each rank's busiest operations\n"
    "    --width N  columns to use (default: the terminal's, or 100)\n"
    "    --ranks LIST  only these ranks, e.g. 0,2,5-7\n"
    "    --from MS, --to MS  only this stretch, in milliseconds from the job's start\n"
    "  html FILE    writes a page that draws the timeline in a browser, self-contained\n"
    "               (works offline): zoom with the wheel, move by dragging, hover for details\n"
    "    -o PAGE    where to write it (default: FILE with .html for .json)\n"
    "\n"
    "Colours in show only on a terminal, and never with NO_COLOR set.\n"
    "Exit status: 0, 1 when a file cannot be read or written, 2 for bad arguments.\n";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One positional argument and the options the subcommand takes, each with a value:
// "--width 80" or "--width=80".
struct Arguments {
  std::string operand;
  std::map<std::string, std::string> options;
};

Arguments parse_arguments(const std::string& command, std::span<const std::string> args,
                          std::initializer_list<const char*> known) {
  Arguments parsed;
  bool have_operand = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    if (name.size() < 2 || name[0] != '-') {
      if (have_operand) {
        throw UsageError(
            concat("tutti trace ", command, ": one file or folder, not \"", parsed.operand, "\" and \"", name, "\""));
      }
      parsed.operand = name;
      have_operand = true;
      continue;
    }
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    bool is_known = false;
    for (const char* option : known) is_known = is_known || name == option;
    if (!is_known) {
      throw UsageError(concat("tutti trace ", command, ": unknown option \"", name, "\"; see tutti trace --help"));
    }
    if (!value) {
      if (i + 1 >= args.size()) throw UsageError(concat("tutti trace ", command, ": ", name, " needs a value"));
      value = args[++i];
    }
    parsed.options[name] = *value;
  }
  if (!have_operand) {
    throw UsageError(concat("tutti trace ", command, ": which ", command == "merge" ? "folder" : "file",
                            "? see tutti trace --help"));
  }
  return parsed;
}

double parse_number(const std::string& option, const std::string& text, double low, double high) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(value >= low && value <= high)) {
    throw UsageError(
        concat("tutti trace show: ", option, " \"", text, "\" is not a number in [", low, ", ", high, "]"));
  }
  return value;
}

// "0,2,5-7".
std::set<int> parse_ranks(const std::string& text) {
  std::set<int> ranks;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t dash = item.find('-');
    const auto bad = [&]() {
      return UsageError(concat("tutti trace show: --ranks \"", text, "\" is not a list of ranks; write e.g. 0,2,5-7"));
    };
    if (item.empty() || item.find_first_not_of("0123456789-") != std::string::npos) throw bad();
    const int first = std::atoi(item.substr(0, dash).c_str());
    const int last = dash == std::string::npos ? first : std::atoi(item.substr(dash + 1).c_str());
    if (dash == 0 || (dash != std::string::npos && dash + 1 == item.size()) || last < first || last - first > 100000) {
      throw bad();
    }
    for (int rank = first; rank <= last; ++rank) ranks.insert(rank);
    start = comma + 1;
  }
  return ranks;
}

int terminal_width() {
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= kMinimumWidth) {
    return size.ws_col;
  }
  return kDefaultWidth;
}

// A merged trace as it is; one rank's file merged alone, which places it on the job's
// clock and closes what it left open.
nlohmann::ordered_json merged_trace_of(const std::string& path) {
  TraceFile file = read_trace_file(path);
  if (file.other_data.is_object() && file.other_data.contains("tutti")) return file.events;
  MergedTrace merged = merge_traces({std::move(file)});
  for (const auto& note : merged.notes) std::fprintf(stderr, "tutti trace: %s\n", note.c_str());
  return merged.trace["traceEvents"];
}

int run_merge(std::span<const std::string> args) {
  Arguments parsed = parse_arguments("merge", args, {"-o", "--output"});
  std::string output = parsed.options.count("-o") ? parsed.options["-o"] : parsed.options["--output"];
  MergeReport report = merge_trace_directory(parsed.operand, output);
  for (const auto& note : report.notes) std::printf("%s\n", note.c_str());
  std::printf("merged %zu trace files (%zu cut short) into %s\n", report.files, report.cut_short,
              report.output.string().c_str());
  return 0;
}

int run_show(std::span<const std::string> args) {
  Arguments parsed = parse_arguments("show", args, {"--width", "--ranks", "--from", "--to"});
  DrawOptions options;
  options.width = parsed.options.count("--width")
                      ? static_cast<int>(parse_number("--width", parsed.options["--width"], kMinimumWidth, kMaxWidth))
                      : terminal_width();
  if (parsed.options.count("--ranks")) options.ranks = parse_ranks(parsed.options["--ranks"]);
  if (parsed.options.count("--from")) options.from_ms = parse_number("--from", parsed.options["--from"], 0, 1e12);
  if (parsed.options.count("--to")) options.to_ms = parse_number("--to", parsed.options["--to"], 0, 1e12);
  if (options.from_ms && options.to_ms && *options.to_ms <= *options.from_ms) {
    throw UsageError(concat("tutti trace show: --to ", *options.to_ms, " is not after --from ", *options.from_ms));
  }
  options.colour = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
  const std::string drawing = draw_timeline(build_timeline(merged_trace_of(parsed.operand)), options);
  std::fwrite(drawing.data(), 1, drawing.size(), stdout);
  return 0;
}

int run_html(std::span<const std::string> args) {
  Arguments parsed = parse_arguments("html", args, {"-o", "--output"});
  std::filesystem::path output = parsed.options.count("-o") ? parsed.options["-o"] : parsed.options["--output"];
  if (output.empty()) output = std::filesystem::path(parsed.operand).replace_extension(".html");
  const std::string title = concat("tutti trace: ", std::filesystem::path(parsed.operand).filename().string());
  write_text_file(output, trace_page(build_timeline(merged_trace_of(parsed.operand)), title));
  std::printf("wrote %s\n", output.string().c_str());
  return 0;
}

}  // namespace

int run_trace(std::span<const std::string> args) {
  const bool help = std::any_of(args.begin(), args.end(), [](auto& arg) { return arg == "--help" || arg == "-h"; });
  if (args.empty() || help || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? kExitUsage : 0;
  }
  const std::string& command = args[0];
  try {
    if (command == "merge") return run_merge(args.subspan(1));
    if (command == "show") return run_show(args.subspan(1));
    if (command == "html") return run_html(args.subspan(1));
    std::fprintf(stderr, "tutti trace: unknown command \"%s\"; use merge, show or html (tutti trace --help)\n",
                 command.c_str());
    return kExitUsage;
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tutti trace %s: %s\n", command.c_str(), error.what());
    return kExitFailure;
  }
}

}  // namespace tutti::observe
