// concat (runtime/common/concat.h) writes what operator<< would, part by part: text,
// integers of every width and sign at their limits, characters (int8_t is one), bools,
// and through a stream the rest (floating point, enums, types with an operator<<).
#include <criterion/criterion.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include "runtime/common/concat.h"

using tutti::concat;

namespace {

enum Plain { kPlainThree = 3 };

struct Point {
  int x, y;
};
std::ostream& operator<<(std::ostream& out, const Point& p) { return out << "(" << p.x << ", " << p.y << ")"; }

// What an ostringstream makes of the same parts.
template <typename... Parts>
std::string streamed(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
void expect_as_streamed(const Parts&... parts) {
  const std::string got = concat(parts...);
  const std::string want = streamed(parts...);
  cr_expect_eq(got, want, "concat gave \"%s\", a stream \"%s\"", got.c_str(), want.c_str());
}

}  // namespace

Test(concat, text_and_integers_as_a_stream_writes_them) {
  cr_expect_eq(concat("rank ", 3, " of ", 8), "rank 3 of 8");
  const std::string prefix = "world.0/";
  expect_as_streamed(prefix, "ucx/ucx/", 12, std::string_view("/tail"), std::string());
  expect_as_streamed(std::numeric_limits<int64_t>::min(), ' ', std::numeric_limits<int64_t>::max());
  expect_as_streamed(std::numeric_limits<uint64_t>::max(), ' ', std::numeric_limits<int32_t>::min());
  expect_as_streamed(short{-7}, ' ', static_cast<unsigned short>(65535), ' ', 0, ' ', 0u, ' ', -1L);
  char buffer[] = "mutable";
  expect_as_streamed(static_cast<char*>(buffer), static_cast<const char*>("const"));
}

Test(concat, characters_and_bools_as_a_stream_writes_them) {
  expect_as_streamed('x', static_cast<int8_t>('A'), static_cast<uint8_t>('b'), static_cast<signed char>('c'));
  expect_as_streamed(true, ' ', false);
}

Test(concat, other_types_go_through_a_stream) {
  expect_as_streamed(3.5, ' ', 0.1, ' ', 1e20, ' ', -0.0, ' ', 2.5f, ' ', 123456789.0);
  expect_as_streamed(kPlainThree, ' ', Point{1, -2});
  cr_expect_eq(concat(Point{4, 5}, "!"), "(4, 5)!");
}

Test(concat, a_null_text_adds_nothing) {
  const char* none = nullptr;
  cr_expect_eq(concat("a", none, "b"), "ab");
}
