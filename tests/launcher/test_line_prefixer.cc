// LinePrefixer: whole lines out, tagged, partial lines kept, long lines in pieces.
#include <criterion/criterion.h>

#include <string>
#include <vector>

#include "launcher/line_prefixer.h"

using tutti::launcher::LinePrefixer;

namespace {

struct Collected {
  std::vector<std::string> calls;
  std::string all() const {
    std::string text;
    for (const auto& call : calls) text += call;
    return text;
  }
};

LinePrefixer make(Collected& out, std::string prefix = "[3] ", size_t max = LinePrefixer::kMaxLineBytes) {
  return LinePrefixer(
      std::move(prefix), [&out](std::string_view lines) { out.calls.emplace_back(lines); }, max);
}

// Criterion's string assertions read c_str() after a temporary is gone; compare here.
void expect_text(const std::string& actual, const char* expected) {
  cr_assert(actual == expected, "got \"%s\", want \"%s\"", actual.c_str(), expected);
}

}  // namespace

Test(line_prefixer, tags_each_complete_line_in_one_call) {
  Collected out;
  auto prefixer = make(out);
  prefixer.feed("a\nbb\n\nccc\n");
  cr_assert_eq(out.calls.size(), 1u);
  expect_text(out.calls[0], "[3] a\n[3] bb\n[3] \n[3] ccc\n");
}

Test(line_prefixer, keeps_a_partial_line_until_it_ends) {
  Collected out;
  auto prefixer = make(out);
  prefixer.feed("hel");
  cr_assert(out.calls.empty());
  cr_assert_eq(prefixer.pending_bytes(), 3u);
  prefixer.feed("lo\nwor");
  prefixer.feed("ld\n");
  expect_text(out.all(), "[3] hello\n[3] world\n");
  cr_assert_eq(prefixer.pending_bytes(), 0u);
}

Test(line_prefixer, finish_flushes_a_partial_last_line_with_a_newline) {
  Collected out;
  auto prefixer = make(out);
  prefixer.feed("done\nno newline");
  prefixer.finish();
  expect_text(out.all(), "[3] done\n[3] no newline\n");
  prefixer.finish();  // nothing left: no empty line
  cr_assert_eq(out.calls.size(), 2u);
}

Test(line_prefixer, empty_prefix_still_splits_into_lines) {
  Collected out;
  auto prefixer = make(out, "");
  prefixer.feed("x\ny");
  prefixer.finish();
  cr_assert_eq(out.calls.size(), 2u);
  expect_text(out.all(), "x\ny\n");
}

Test(line_prefixer, long_lines_come_out_in_pieces_and_memory_stays_bounded) {
  Collected out;
  auto prefixer = make(out, "[0] ", 4);
  prefixer.feed("abcdefghij");
  cr_assert_leq(prefixer.pending_bytes(), 4u);
  prefixer.feed("\n");
  expect_text(out.all(), "[0] abcd\n[0] efgh\n[0] ij\n");
}

Test(line_prefixer, a_line_of_exactly_the_limit_is_one_line) {
  Collected out;
  auto prefixer = make(out, "[0] ", 4);
  prefixer.feed("abcd");
  cr_assert(out.calls.empty(), "the piece waits for the next byte");
  prefixer.feed("\nefgh\n");
  expect_text(out.all(), "[0] abcd\n[0] efgh\n");
}

Test(line_prefixer, byte_by_byte_matches_all_at_once) {
  std::string input = "one\ntwo three four five\n\nsix";
  Collected whole;
  Collected bytes;
  auto a = make(whole, "[1] ", 5);
  auto b = make(bytes, "[1] ", 5);
  a.feed(input);
  for (char c : input) b.feed(std::string_view(&c, 1));
  a.finish();
  b.finish();
  cr_assert(whole.all() == bytes.all());
  expect_text(whole.all(), "[1] one\n[1] two t\n[1] hree \n[1] four \n[1] five\n[1] \n[1] six\n");
}
