// group_by_rank and pictures_side_by_side: how rank 0 shows every rank's output.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "repl/rank_output.h"

using tutti::repl::group_by_rank;
using tutti::repl::pictures_side_by_side;

// Criterion's string assertions read c_str() after a temporary is gone; compare here.
static void expect_text(const std::string& actual, const char* expected) {
  cr_assert(actual == expected, "got:\n%s\nwant:\n%s", actual.c_str(), expected);
}

Test(rank_output, identical_outputs_fold_into_one_group) {
  expect_text(group_by_rank({"4\n", "4\n", "4\n", "4\n"}), "[0-3] 4\n");
  expect_text(group_by_rank({"4\n"}), "[0] 4\n");
}

Test(rank_output, groups_come_in_the_order_of_their_lowest_rank) {
  expect_text(group_by_rank({"even\n", "odd\n", "even\n", "odd\n"}), "[0,2] even\n[1,3] odd\n");
  expect_text(group_by_rank({"b\n", "a\n", "a\n", "a\n", "b\n", "c\n"}), "[0,4] b\n[1-3] a\n[5] c\n");
  expect_text(group_by_rank({"0\n", "10\n", "20\n"}), "[0] 0\n[1] 10\n[2] 20\n");
}

Test(rank_output, every_line_is_tagged_and_a_last_line_is_ended) {
  expect_text(group_by_rank({"a\nb\n", "a\nb\n", "a\nc"}), "[0,1] a\n[0,1] b\n[2] a\n[2] c\n");
  expect_text(group_by_rank({"\n", "x"}), "[0] \n[1] x\n");
}

Test(rank_output, ranks_that_printed_nothing_are_left_out) {
  expect_text(group_by_rank({"", "boom\n", "", ""}), "[1] boom\n");
  expect_text(group_by_rank({"", "", ""}), "");
  expect_text(group_by_rank({}), "");
}

Test(rank_output, messages_that_differ_only_in_their_own_rank_fold_naming_the_ranks) {
  expect_text(group_by_rank({"", "tutti: rank 1 of 4: boom\n", "", "tutti: rank 3 of 4: boom\n"}),
              "[1,3] tutti: rank 1,3 of 4: boom\n");
  expect_text(group_by_rank({"TIMEOUT: all_reduce #4 on comm \"world\" (rank 0 of 3) timed out\n",
                             "TIMEOUT: all_reduce #4 on comm \"world\" (rank 1 of 3) timed out\n", "boom\n"}),
              "[0,1] TIMEOUT: all_reduce #4 on comm \"world\" (rank 0,1 of 3) timed out\n[2] boom\n");
  // Other mentions of ranks are text like any other.
  expect_text(group_by_rank({"waits for rank 1 of 2\n", "waits for rank 1 of 2\n"}), "[0,1] waits for rank 1 of 2\n");
  expect_text(group_by_rank({"tutti: rank 0 of 2: x\n", "tutti: rank 1 of 2: y\n"}),
              "[0] tutti: rank 0 of 2: x\n[1] tutti: rank 1 of 2: y\n");
}

Test(rank_output, pictures_come_side_by_side_under_their_ranks) {
  expect_text(pictures_side_by_side({{"ab\ncd\n"}, {}, {"ef\n"}}), "rank 0   rank 2\nab       ef\ncd\n");
  // The second pictures make a second row.
  expect_text(pictures_side_by_side({{"a\n", "b\n"}, {"c\n"}}), "rank 0   rank 1\na        c\nrank 0\nb\n");
  expect_text(pictures_side_by_side({{}, {}}), "");
}
