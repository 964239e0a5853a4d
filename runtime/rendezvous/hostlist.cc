#include "runtime/rendezvous/hostlist.h"

#include <cstdint>
#include <optional>

#include "runtime/common/concat.h"
#include "runtime/common/error.h"

namespace tutti::rendezvous {
namespace {

constexpr const char* kExample = "expected a list such as gpu[01-03,07],cpu5";
// 18 digits always fit in uint64_t, and no real node number comes near that.
constexpr size_t kMaxDigits = 18;

struct Range {
  uint64_t low;
  uint64_t high;
  size_t width;  // digits of the low bound as written, so "08" keeps its zero
};

// One piece of a name: literal text, or a bracket when ranges is non-empty.
struct Segment {
  std::string text;
  std::vector<Range> ranges;
};

struct Name {
  size_t column;  // 1-based, where the name starts, for messages
  std::vector<Segment> segments;
};

[[noreturn]] void fault(std::string_view text, size_t index, const std::string& what) {
  fail(Status::kInvalidArgument,
       concat("hostlist \"", text, "\" is not valid: ", what, " at column ", index + 1, "; ", kExample));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads the digits at text[pos], advancing pos. The caller has checked for one digit.
uint64_t read_number(std::string_view text, size_t& pos) {
  size_t start = pos;
  uint64_t value = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    if (pos - start == kMaxDigits) fault(text, start, concat("a number longer than ", kMaxDigits, " digits"));
    value = value * 10 + static_cast<uint64_t>(text[pos] - '0');
    ++pos;
  }
  return value;
}

// Parses "01-03,07" starting after '[' at text[pos]; leaves pos after the ']'.
std::vector<Range> parse_bracket(std::string_view text, size_t& pos) {
  size_t open = pos - 1;
  std::vector<Range> ranges;
  while (true) {
    if (pos >= text.size()) fault(text, open, "unbalanced '['");
    if (!is_digit(text[pos])) {
      if (text[pos] == ']' || text[pos] == ',') fault(text, pos, "an empty range");
      if (text[pos] == '[') fault(text, pos, "'[' inside brackets");
      fault(text, pos, concat("a range that is not numeric ('", text[pos], "')"));
    }
    size_t start = pos;
    uint64_t low = read_number(text, pos);
    // Width is the low bound's digits as written: "08" pads to two, "8" does not pad.
    size_t width = pos - start;
    uint64_t high = low;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (pos >= text.size()) fault(text, open, "unbalanced '['");
      if (!is_digit(text[pos])) fault(text, pos, concat("a range that is not numeric ('", text[pos], "')"));
      high = read_number(text, pos);
      if (high < low) fault(text, start, concat("a reversed range ", text.substr(start, pos - start)));
    }
    ranges.push_back(Range{low, high, width});
    if (pos >= text.size()) fault(text, open, "unbalanced '['");
    if (text[pos] == ']') {
      ++pos;
      return ranges;
    }
    if (text[pos] != ',') {
      if (text[pos] == '[') fault(text, pos, "'[' inside brackets");
      fault(text, pos, concat("a range that is not numeric ('", text[pos], "')"));
    }
    ++pos;
  }
}

// Parses the name starting at text[pos]; leaves pos on the ',' after it or at the end.
Name parse_name(std::string_view text, size_t& pos) {
  Name name{pos + 1, {}};
  std::string literal;
  while (pos < text.size() && text[pos] != ',') {
    char c = text[pos];
    if (c == '[') {
      ++pos;
      name.segments.push_back(Segment{std::move(literal), {}});
      literal.clear();
      name.segments.back().ranges = parse_bracket(text, pos);
    } else if (c == ']') {
      fault(text, pos, "unbalanced ']'");
    } else if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      fault(text, pos, "whitespace or a control character");
    } else {
      literal.push_back(c);
      ++pos;
    }
  }
  if (name.segments.empty() && literal.empty()) fault(text, pos, "an empty name");
  if (!literal.empty()) name.segments.push_back(Segment{std::move(literal), {}});
  return name;
}

// Calls visit(name) for each name in order, stopping early when it returns false.
template <typename Visit>
void parse_hostlist(std::string_view text, Visit visit) {
  size_t pos = 0;
  while (true) {
    Name name = parse_name(text, pos);
    if (!visit(name)) return;
    if (pos == text.size()) return;
    ++pos;  // the ','
    if (pos == text.size()) fault(text, pos, "an empty name");
  }
}

// How many hosts a name stands for, saturating at cap so that no product overflows.
uint64_t count_hosts(const Name& name, uint64_t cap) {
  uint64_t total = 1;
  for (const Segment& segment : name.segments) {
    if (segment.ranges.empty()) continue;
    uint64_t in_bracket = 0;
    for (const Range& range : segment.ranges) {
      uint64_t span = range.high - range.low + 1;
      in_bracket = span > cap - in_bracket ? cap : in_bracket + span;
    }
    total = in_bracket != 0 && total > cap / in_bracket ? cap : total * in_bracket;
  }
  return total;
}

void append_number(std::string& out, uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) out.append(width - digits.size(), '0');
  out += digits;
}

// Appends every host of name, the first bracket varying slowest ("r[1-2]n[1-2]" is
// r1n1 r1n2 r2n1 r2n2), by recursing over the segments with the prefix built so far.
void expand_name(const Name& name, size_t segment_index, std::string& prefix, std::vector<std::string>& out) {
  if (segment_index == name.segments.size()) {
    out.push_back(prefix);
    return;
  }
  const Segment& segment = name.segments[segment_index];
  size_t keep = prefix.size();
  if (segment.ranges.empty()) {
    prefix += segment.text;
    expand_name(name, segment_index + 1, prefix, out);
  } else {
    for (const Range& range : segment.ranges) {
      for (uint64_t value = range.low;; ++value) {
        prefix.resize(keep);
        prefix += segment.text;
        append_number(prefix, value, range.width);
        expand_name(name, segment_index + 1, prefix, out);
        if (value == range.high) break;
      }
    }
  }
  prefix.resize(keep);
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view text, size_t max_hosts) {
  // Parse and count everything before expanding anything, so that "n[0-999999999]"
  // is refused without allocating a billion strings.
  std::vector<Name> names;
  uint64_t cap = static_cast<uint64_t>(max_hosts) + 1;
  uint64_t total = 0;
  parse_hostlist(text, [&](Name& name) {
    uint64_t count = count_hosts(name, cap);
    total = count > cap - total ? cap : total + count;
    if (total > max_hosts) {
      fail(Status::kInvalidArgument, concat("hostlist \"", text, "\" is not valid: it names more than ", max_hosts,
                                            " hosts, the limit, by the name at column ", name.column,
                                            "; check the list, or raise the limit if the job really is that large"));
    }
    names.push_back(std::move(name));
    return true;
  });
  std::vector<std::string> hosts;
  hosts.reserve(static_cast<size_t>(total));
  std::string prefix;
  for (const Name& name : names) expand_name(name, 0, prefix, hosts);
  return hosts;
}

std::string first_host(std::string_view text) {
  // The whole text is still parsed, so that a fault anywhere in it is reported the
  // same way expand_hostlist would report it; parsing is linear and expands nothing.
  std::optional<std::string> first;
  parse_hostlist(text, [&](const Name& name) {
    if (!first) {
      first.emplace();
      for (const Segment& segment : name.segments) {
        *first += segment.text;
        if (!segment.ranges.empty()) append_number(*first, segment.ranges[0].low, segment.ranges[0].width);
      }
    }
    return true;
  });
  return *first;
}

}  // namespace tutti::rendezvous
