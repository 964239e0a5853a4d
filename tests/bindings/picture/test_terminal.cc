// render_terminal: the escape codes of a cell, the legend, and the grid without colour.
// Criterion runs each test in its own process, so setenv cannot leak into another test.
#include <criterion/criterion.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "bindings/picture/picture.h"

using tutti::picture::Matrix;
using tutti::picture::render_terminal;

namespace {

const std::string kBlue = "\x1b[48;2;31;119;180m  ";        // tab20[0], value 0
const std::string kLightBlue = "\x1b[48;2;174;199;232m  ";  // tab20[1], value 1
const std::string kOrange = "\x1b[48;2;255;127;14m  ";      // tab20[2], value 2
const std::string kPeach = "\x1b[48;2;255;187;120m  ";      // tab20[3], value 3
const std::string kWhite = "\x1b[48;2;255;255;255m  ";      // NaN
const std::string kReset = "\x1b[0m";

std::string render(const std::vector<double>& values, size_t rows, size_t cols, bool use_colour) {
  cr_assert_eq(values.size(), rows * cols);
  return render_terminal(Matrix{values.data(), rows, cols}, use_colour);
}

void expect_text(const std::string& actual, const std::string& expected) {
  cr_expect(actual == expected, "got:\n%s\nexpected:\n%s", actual.c_str(), expected.c_str());
}

// How many times needle occurs in haystack.
size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

Test(terminal, cells_are_24_bit_backgrounds_two_columns_wide_then_a_legend) {
  unsetenv("NO_COLOR");
  expect_text(render({0, 3, 3, 0}, 2, 2, true), kBlue + kPeach + kReset + "\n" +      //
                                                    kPeach + kBlue + kReset + "\n" +  //
                                                    kBlue + kReset + " 0  " + kPeach + kReset + " 3\n");
}

Test(terminal, legend_lists_each_value_once_in_order_without_point_zero) {
  unsetenv("NO_COLOR");
  std::string picture = render({2, 0, 1, 1, 0, 2}, 2, 3, true);
  std::string legend = picture.substr(picture.rfind(kReset + "\n") + kReset.size() + 1);
  expect_text(legend, kBlue + kReset + " 0  " + kLightBlue + kReset + " 1  " + kOrange + kReset + " 2\n");
}

Test(terminal, legend_shows_fractions_and_nan_and_counts_what_it_leaves_out) {
  unsetenv("NO_COLOR");
  std::string picture = render({0.5, std::nan(""), -0.0}, 1, 3, true);
  expect_text(picture, kBlue + kWhite + kBlue + kReset + "\n" +  //
                           kBlue + kReset + " 0  " + kBlue + kReset + " 0.5  " + kWhite + kReset + " nan\n");

  std::vector<double> many;
  for (int i = 0; i < 25; ++i) {
    many.push_back(i);
  }
  picture = render(many, 5, 5, true);
  cr_expect(picture.find(" 19") != std::string::npos);
  cr_expect(picture.find(" 20") == std::string::npos, "the legend lists no more values than tab20 has colours");
  cr_expect(picture.find("+5 more\n") != std::string::npos, "%s", picture.c_str());
}

// Eleven values in a picture 22 columns wide: four legend entries (4 columns each, 2
// apart) fit in 24 columns, so the legend takes three lines.
Test(terminal, legend_wraps_at_the_pictures_width) {
  unsetenv("NO_COLOR");
  std::vector<double> values;
  for (int i = 0; i < 11; ++i) {
    values.push_back(i);
  }
  std::string picture = render(values, 1, 11, true);
  size_t legend = picture.find('\n') + 1;
  std::string first = picture.substr(legend, picture.find('\n', legend) - legend);
  cr_expect_eq(count(first, kReset), 4u, "first legend line: %s", first.c_str());
  cr_expect_eq(count(picture, "\n"), 4u, "%s", picture.c_str());
}

Test(terminal, without_colour_values_form_an_aligned_grid) {
  unsetenv("NO_COLOR");
  expect_text(render({0, 1, 2, 10, 11.5, -3}, 2, 3, false),
              "   0    1    2\n"
              "  10 11.5   -3\n");
  expect_text(render({3.0, -0.0, 1e20, 0.25}, 1, 4, false), "    3     0 1e+20  0.25\n");
  expect_text(render({std::nan(""), INFINITY}, 2, 1, false), "nan\ninf\n");
}

Test(terminal, no_color_turns_colour_off_unless_empty) {
  setenv("NO_COLOR", "1", 1);
  expect_text(render({1, 2}, 1, 2, true), "1 2\n");
  setenv("NO_COLOR", "", 1);
  cr_expect(render({1, 2}, 1, 2, true).find(kLightBlue) == 0);
}

Test(terminal, an_empty_matrix_says_so) {
  expect_text(render_terminal(Matrix{nullptr, 0, 11}, true), "(empty 0x11 matrix)\n");
}

// The tutorial's 11x11 picture: every row has 11 cells and one reset, and the legend
// names the three values.
Test(terminal, tutorial_picture_has_eleven_cells_a_row) {
  unsetenv("NO_COLOR");
  std::vector<double> values(121, 0);
  values[3 * 11 + 3] = 1;
  values[8 * 11 + 8] = 2;
  std::string picture = render(values, 11, 11, true);
  size_t start = 0;
  for (int row = 0; row < 11; ++row) {
    size_t end = picture.find('\n', start);
    std::string line = picture.substr(start, end - start);
    cr_expect_eq(count(line, "\x1b[48;2;"), 11u, "row %d: %s", row, line.c_str());
    cr_expect(line.size() >= kReset.size() && line.compare(line.size() - kReset.size(), kReset.size(), kReset) == 0);
    start = end + 1;
  }
  std::string legend = kBlue + kReset + " 0  " + kLightBlue + kReset + " 1  " + kOrange + kReset + " 2\n";
  expect_text(picture.substr(start), legend);
}
