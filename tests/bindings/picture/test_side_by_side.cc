// side_by_side: columns padded by visible width, titles, and blocks of unequal height.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "bindings/picture/picture.h"

using tutti::picture::side_by_side;

namespace {

const std::string kRed = "\x1b[48;2;214;39;40m";
const std::string kReset = "\x1b[0m";

void expect_text(const std::string& actual, const std::string& expected) {
  cr_expect(actual == expected, "got:\n%s\nexpected:\n%s", actual.c_str(), expected.c_str());
}

}  // namespace

// Rank 0's block is two coloured cells (4 columns, 30 bytes) and two lines high; rank
// 1's is three lines of plain text. The title is the widest thing in column 0, so
// column 1 starts at 6 + 3.
Test(side_by_side, escapes_take_no_columns_and_short_blocks_are_padded) {
  std::string rank0 = kRed + "  " + kRed + "  " + kReset + "\n" + "ab\n";
  std::string rank1 = "1 2\n3 4\n5 6\n";
  expect_text(side_by_side({rank0, rank1}, {"rank 0", "rank 1"}),
              "rank 0   rank 1\n" +                                    //
                  kRed + "  " + kRed + "  " + kReset + "     1 2\n" +  //
                  "ab       3 4\n" +                                   //
                  "         5 6\n");
}

Test(side_by_side, a_wide_block_pushes_the_next_column_and_lines_have_no_trailing_blanks) {
  expect_text(side_by_side({"0123456789\n", "x\ny\n", "z\n"}, {"rank 0", "rank 1", "rank 2"}),
              "rank 0       rank 1   rank 2\n"
              "0123456789   x        z\n"
              "             y\n");
}

Test(side_by_side, titles_may_be_missing_or_utf8) {
  expect_text(side_by_side({"a\n", "b\n"}, {}), "a   b\n");
  expect_text(side_by_side({"a\n", "b\n"}, {"", "rank 1"}), "    rank 1\na   b\n");
  // "rang é" is 7 bytes but 6 columns.
  expect_text(side_by_side({"a\n", "b\n"}, {"rang \xc3\xa9", "x"}), "rang \xc3\xa9   x\na        b\n");
}

Test(side_by_side, a_block_without_a_final_newline_and_no_blocks) {
  expect_text(side_by_side({"a\nb", "c\n"}, {}), "a   c\nb\n");
  expect_text(side_by_side({}, {}), "");
}
