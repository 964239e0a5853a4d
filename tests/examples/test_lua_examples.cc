// The Lua examples (examples/lua), run as the README runs them: under tutti launch with
// a plain lua5.4 and the module from this build, and on 4 ranks with tutti's own script
// runner too (`tutti launch -n 4 tutti script.lua`). Checked against what this test
// works out for itself: every matrix each rank prints (NO_COLOR=1 makes t:show() print
// numbers), every PNG that --png writes (decoded, the colour of each cell against
// tab20, and no file more or less), the classifier's falling loss, its accuracy and
// weights identical on every rank, and the clear refusal of a world size an example
// cannot draw for. The drawings are the tutorial's own disk and square in its 0-based
// coordinates, and ranks 2 and 3 their half turns, so that the examples' literal
// coordinates are checked rather than copied. On 4 ranks, examples/README.md's excerpts
// of the output and its pictures (examples/pictures) are checked too, so that the page
// cannot drift from what the examples do. The C++ example (examples/cpp/01_all_reduce,
// the wrapper of bindings/cpp) is checked here against the same drawings, so that it
// shows what the Lua one shows.
#include <criterion/criterion.h>
#include <dirent.h>
#include <png.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "bindings/picture/palette.h"
#include "tests/support/launch_job.h"

#ifndef TUTTI_LUA_INTERPRETER
#error \
    "TUTTI_LUA_INTERPRETER (lua5.4), TUTTI_LUA_MODULE_DIR and TUTTI_CPP_EXAMPLES_DIR must be defined by tests/CMakeLists.txt"
#endif

namespace {

constexpr int kSide = 11;        // the tutorial's matrices are 11x11
constexpr int kCellPixels = 34;  // t:save_png's default

struct Grid {
  int rows, cols;
  std::vector<double> values;  // row-major

  double& at(int r, int c) { return values[static_cast<size_t>(r * cols + c)]; }
  double at(int r, int c) const { return values[static_cast<size_t>(r * cols + c)]; }
};

Grid zeros(int rows, int cols) { return Grid{rows, cols, std::vector<double>(static_cast<size_t>(rows * cols))}; }

Grid row(std::initializer_list<double> values) {
  return Grid{1, static_cast<int>(values.size()), std::vector<double>(values)};
}

// The tutorial's disk(), as a mask: the cells with ((x - cx) / r)^2 + ((y - cy) / r)^2 <= 1.
Grid disk(int cx, int cy, double radius) {
  Grid mask = zeros(kSide, kSide);
  for (int x = 0; x < kSide; ++x) {
    for (int y = 0; y < kSide; ++y) {
      double dx = (x - cx) / radius, dy = (y - cy) / radius;
      mask.at(x, y) = dx * dx + dy * dy <= 1 ? 1 : 0;
    }
  }
  return mask;
}

// The tutorial's square(), as a mask: 0 <= x - tx <= length and 0 <= y - ty <= length.
Grid square(int tx, int ty, int length) {
  Grid mask = zeros(kSide, kSide);
  for (int x = tx; x <= tx + length && x < kSide; ++x) {
    for (int y = ty; y <= ty + length && y < kSide; ++y) mask.at(x, y) = 1;
  }
  return mask;
}

// Half a turn about the centre: what ranks 2 and 3 draw.
Grid turned(const Grid& g) {
  Grid out = g;
  std::reverse(out.values.begin(), out.values.end());
  return out;
}

Grid times(Grid g, double value) {
  for (double& v : g.values) v *= value;
  return g;
}

Grid maximum(Grid a, const Grid& b) {
  for (size_t i = 0; i < a.values.size(); ++i) a.values[i] = std::max(a.values[i], b.values[i]);
  return a;
}

// What rank draws in 01 to 03: the tutorial's first two shapes, then their half turns.
Grid drawn(const Grid (&tutorial)[2], int rank) {
  Grid mask = rank < 2 ? tutorial[rank] : turned(tutorial[rank - 2]);
  return times(mask, rank + 1);
}

// One matrix an example prints after "Rank: <rank>, <title>." and, when png is not
// empty, saves as rank_<rank>_<png>.png.
struct Picture {
  int rank;
  std::string title;
  std::string png;
  Grid expected;
};

std::string format_grid(const Grid& g) {
  std::string text;
  for (int r = 0; r < g.rows; ++r) {
    for (int c = 0; c < g.cols; ++c) text += (c ? " " : "  ") + std::to_string(static_cast<long long>(g.at(r, c)));
    text += '\n';
  }
  return text;
}

// The grid printed after "[rank] Rank: <rank>, <title>.": the next `rows` lines of that
// rank (the other ranks' lines may come between). Returns "" or what was wrong.
std::string read_grid(const char* output, const Picture& picture, Grid* grid) {
  std::string tag = "[" + std::to_string(picture.rank) + "] ";
  std::string heading = tag + "Rank: " + std::to_string(picture.rank) + ", " + picture.title + ".\n";
  const char* at = std::strstr(output, heading.c_str());
  while (at != nullptr && at != output && at[-1] != '\n') at = std::strstr(at + 1, heading.c_str());
  if (at == nullptr) return "no line \"" + heading.substr(0, heading.size() - 1) + "\"";
  at += heading.size();
  *grid = zeros(picture.expected.rows, picture.expected.cols);
  for (int r = 0; r < grid->rows; ++r) {
    while (*at != '\0' && std::strncmp(at, tag.c_str(), tag.size()) != 0) at = std::strchr(at, '\n') + 1;
    if (*at == '\0') return "the output ends after " + std::to_string(r) + " of its rows";
    const char* cursor = at + tag.size();
    for (int c = 0; c < grid->cols; ++c) {
      char* end = nullptr;
      grid->at(r, c) = std::strtod(cursor, &end);
      if (end == cursor) return "row " + std::to_string(r + 1) + " has " + std::to_string(c) + " numbers";
      cursor = end;
    }
    if (*cursor != '\n') {
      return "row " + std::to_string(r + 1) + " has more than " + std::to_string(grid->cols) + " numbers";
    }
    at = cursor + 1;
  }
  return "";
}

// The PNG's cells, each checked at its centre against tab20's colour for the value.
void expect_png(const std::string& path, const Grid& expected) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  cr_assert(png_image_begin_read_from_file(&image, path.c_str()) != 0, "%s: %s", path.c_str(), image.message);
  image.format = PNG_FORMAT_RGB;
  std::vector<png_byte> rgb(PNG_IMAGE_SIZE(image));
  cr_assert(png_image_finish_read(&image, nullptr, rgb.data(), 0, nullptr) != 0, "%s: %s", path.c_str(), image.message);
  cr_assert_eq(image.width, static_cast<png_uint_32>(expected.cols * kCellPixels), "%s: width", path.c_str());
  cr_assert_eq(image.height, static_cast<png_uint_32>(expected.rows * kCellPixels), "%s: height", path.c_str());
  int wrong = 0;
  std::string first;
  for (int r = 0; r < expected.rows; ++r) {
    for (int c = 0; c < expected.cols; ++c) {
      size_t x = static_cast<size_t>(c * kCellPixels + kCellPixels / 2);
      size_t y = static_cast<size_t>(r * kCellPixels + kCellPixels / 2);
      const png_byte* pixel = &rgb[(y * image.width + x) * 3];
      tutti::picture::Rgb want = tutti::picture::cell_colour(expected.at(r, c));
      if (pixel[0] == want.r && pixel[1] == want.g && pixel[2] == want.b) continue;
      if (wrong++ == 0) {
        char text[160];
        std::snprintf(text, sizeof text, "cell (%d, %d) is #%02x%02x%02x, expected #%02x%02x%02x for %g", r + 1, c + 1,
                      pixel[0], pixel[1], pixel[2], want.r, want.g, want.b, expected.at(r, c));
        first = text;
      }
    }
  }
  cr_expect_eq(wrong, 0, "%s: %d cells of the wrong colour, the first %s", path.c_str(), wrong, first.c_str());
}

tt_job job;
char png_dir[64];

void remove_png_dir() {
  if (png_dir[0] == '\0') return;
  if (DIR* dir = opendir(png_dir)) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') unlink((std::string(png_dir) + "/" + entry->d_name).c_str());
    }
    closedir(dir);
  }
  rmdir(png_dir);
  png_dir[0] = '\0';
}

void teardown() {
  tt_job_cleanup(&job);
  remove_png_dir();
}

const char* const kNeedles[] = {"Rank:", "lua5.4:", "tutti:", "tutti launch:", "error", nullptr};

// What runs the script on each rank: a plain lua5.4 that loads the module from the
// build, or tutti's own script runner (`tutti launch -n 4 tutti script.lua`).
enum class Runner { kLua, kTutti };

const char* runner_name(Runner runner) { return runner == Runner::kLua ? "lua5.4" : "tutti"; }

// Runs examples/lua/<script> on `ranks` ranks with the given arguments to its end.
void run(Runner runner, const char* script, int ranks, std::initializer_list<const char*> args) {
  tt_job_cleanup(&job);
  tt_job_init(&job, ranks, tt_timeout_ms(60000) / 1000,
              runner == Runner::kLua ? TUTTI_LUA_INTERPRETER : TUTTI_TEST_LAUNCHER);
  tt_job_arg(&job, "%s/examples/lua/%s", TUTTI_TEST_SOURCE_DIR, script);
  for (const char* arg : args) tt_job_arg(&job, "%s", arg);
  if (runner == Runner::kLua) tt_job_env(&job, "LUA_CPATH=%s/?.so", TUTTI_LUA_MODULE_DIR);
  tt_job_env(&job, "NO_COLOR=1");
  cr_assert(tt_job_run(&job, 90000), "%s did not end within 90 s: %s\n%s", script, tt_job_command(&job),
            tt_excerpt(job.output, kNeedles));
}

// Runs the C++ example build/bin/cpp/<name> on `ranks` ranks to its end.
void run_cpp(const char* name, int ranks) {
  tt_job_cleanup(&job);
  tt_job_init(&job, ranks, tt_timeout_ms(60000) / 1000, (std::string(TUTTI_CPP_EXAMPLES_DIR) + "/" + name).c_str());
  cr_assert(tt_job_run(&job, 90000), "%s did not end within 90 s: %s\n%s", name, tt_job_command(&job),
            tt_excerpt(job.output, kNeedles));
}

// The picture's matrix, as the example printed it, against the one expected.
void expect_printed(const char* script, int ranks, const Picture& picture) {
  Grid printed{0, 0, {}};
  std::string problem = read_grid(job.output, picture, &printed);
  cr_assert(problem.empty(), "%s -n %d, rank %d, \"%s\": %s\n%s", script, ranks, picture.rank, picture.title.c_str(),
            problem.c_str(), tt_excerpt(job.output, kNeedles));
  cr_expect(printed.values == picture.expected.values, "%s -n %d, rank %d, \"%s\": printed\n%sexpected\n%s", script,
            ranks, picture.rank, picture.title.c_str(), format_grid(printed).c_str(),
            format_grid(picture.expected).c_str());
}

// The README's excerpts of what the example prints on 4 ranks: every line starting with
// "[" in the code blocks of its section ("### 01_all_reduce: ...") is a line of output.
void expect_readme_excerpts(const char* script) {
  std::string path = std::string(TUTTI_TEST_SOURCE_DIR) + "/examples/README.md";
  FILE* file = std::fopen(path.c_str(), "r");
  cr_assert(file != nullptr, "cannot read %s", path.c_str());
  std::string heading = "### " + std::string(script, std::strcspn(script, ".")) + ":";
  bool in_section = false, in_block = false, found = false;
  char text[512];
  while (std::fgets(text, sizeof text, file) != nullptr) {
    std::string line = text;
    if (line.rfind("## ", 0) == 0 || line.rfind("### ", 0) == 0) {
      in_section = line.rfind(heading, 0) == 0;
      found = found || in_section;
    }
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) {
      in_block = !in_block;
    } else if (in_block && line[0] == '[') {
      cr_expect(std::strstr(job.output, ("\n" + line).c_str()) != nullptr ||
                    std::strncmp(job.output, line.c_str(), line.size()) == 0,
                "examples/README.md shows \"%.*s\" for %s, which it no longer prints",
                static_cast<int>(line.size() - 1), line.c_str(), script);
    }
  }
  std::fclose(file);
  cr_expect(found, "examples/README.md has no section \"%s\"", heading.c_str());
}

// Runs the example with --png into a fresh folder, expects exit status 0, and checks
// every picture: printed, and saved where it has a PNG name, and no other PNG saved.
// On 4 ranks, the README's excerpts and pictures (examples/pictures) must match too.
void run_and_check(Runner runner, const char* script, int ranks, const std::vector<Picture>& pictures) {
  remove_png_dir();
  std::strcpy(png_dir, "/tmp/tutti_examples_XXXXXX");
  cr_assert(mkdtemp(png_dir) != nullptr, "mkdtemp failed");
  run(runner, script, ranks, {"--png", png_dir});
  cr_assert_eq(job.process.exit_code, 0, "%s -n %d under %s exited %d: %s\n%s", script, ranks, runner_name(runner),
               job.process.exit_code, tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  std::set<std::string> expected_files;
  for (const Picture& picture : pictures) {
    expect_printed(script, ranks, picture);
    if (picture.png.empty()) continue;
    std::string name = "rank_" + std::to_string(picture.rank) + "_" + picture.png + ".png";
    expected_files.insert(name);
    expect_png(std::string(png_dir) + "/" + name, picture.expected);
    if (ranks == 4) expect_png(std::string(TUTTI_TEST_SOURCE_DIR) + "/examples/pictures/" + name, picture.expected);
  }
  std::set<std::string> files;
  DIR* dir = opendir(png_dir);
  cr_assert(dir != nullptr, "cannot read %s", png_dir);
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') files.insert(entry->d_name);
  }
  closedir(dir);
  for (const std::string& name : files) {
    cr_expect(expected_files.count(name), "%s wrote %s, which is not expected", script, name.c_str());
  }
  cr_expect_eq(files.size(), expected_files.size(), "%s -n %d wrote %zu PNG files, expected %zu", script, ranks,
               files.size(), expected_files.size());
  if (ranks == 4) expect_readme_excerpts(script);
}

// Under lua5.4, and on 4 ranks, the README's command, under tutti's script runner too.
void run_and_check(const char* script, int ranks, const std::vector<Picture>& pictures) {
  run_and_check(Runner::kLua, script, ranks, pictures);
  if (ranks == 4) run_and_check(Runner::kTutti, script, ranks, pictures);
}

// 01 to 03: each rank draws one shape, then one collective.
std::vector<Picture> before_after(const Grid (&tutorial)[2], int ranks, const char* op, const std::string& title_after,
                                  const std::vector<Grid>& after) {
  std::vector<Picture> pictures;
  for (int rank = 0; rank < ranks; ++rank) {
    pictures.push_back({rank, std::string("before ") + op, std::string("before_") + op, drawn(tutorial, rank)});
    pictures.push_back({rank, title_after, std::string("after_") + op, after[static_cast<size_t>(rank)]});
  }
  return pictures;
}

}  // namespace

TestSuite(lua_examples, .fini = teardown, .timeout = 180);

Test(lua_examples, all_reduce_leaves_the_maximum_on_every_rank) {
  const Grid tutorial[2] = {disk(3, 3, 2), square(3, 3, 2)};
  for (int ranks : {2, 4}) {
    Grid result = zeros(kSide, kSide);
    for (int rank = 0; rank < ranks; ++rank) result = maximum(result, drawn(tutorial, rank));
    std::vector<Grid> after(static_cast<size_t>(ranks), result);
    run_and_check("01_all_reduce.lua", ranks,
                  before_after(tutorial, ranks, "all_reduce", "after all_reduce(max)", after));
  }
}

Test(lua_examples, reduce_leaves_the_maximum_on_rank_0_only) {
  const Grid tutorial[2] = {disk(4, 5, 2), square(3, 3, 2)};
  for (int ranks : {2, 4}) {
    std::vector<Grid> after;
    for (int rank = 0; rank < ranks; ++rank) after.push_back(drawn(tutorial, rank));
    for (int rank = 1; rank < ranks; ++rank) after[0] = maximum(after[0], after[static_cast<size_t>(rank)]);
    run_and_check("02_reduce.lua", ranks, before_after(tutorial, ranks, "reduce", "after reduce(max, dst 0)", after));
  }
}

Test(lua_examples, broadcast_gives_every_rank_rank_0s_disk) {
  const Grid tutorial[2] = {disk(4, 5, 2), square(3, 3, 2)};
  for (int ranks : {2, 4}) {
    std::vector<Grid> after(static_cast<size_t>(ranks), drawn(tutorial, 0));
    run_and_check("03_broadcast.lua", ranks,
                  before_after(tutorial, ranks, "broadcast", "after broadcast(src 0)", after));
  }
}

Test(lua_examples, all_gather_gives_every_rank_every_disk) {
  const Grid tutorial[2] = {disk(4, 5, 2), disk(7, 6, 2)};
  for (int ranks : {2, 4}) {
    std::vector<Picture> pictures;
    for (int rank = 0; rank < ranks; ++rank) {
      pictures.push_back({rank, "before all_gather", "before_all_gather", drawn(tutorial, rank)});
      for (int i = 0; i < ranks; ++i) {
        pictures.push_back({rank, "after all_gather, tensor_list[" + std::to_string(i + 1) + "]",
                            "after_all_gather_" + std::to_string(i), drawn(tutorial, i)});
      }
    }
    run_and_check("04_all_gather.lua", ranks, pictures);
  }
}

Test(lua_examples, reduce_scatter_gives_rank_i_the_maximum_of_the_ith_inputs) {
  // The tutorial's inputs, [rank][i]; entries past 2 are half turns, twice for rank and
  // input both past 2, which is no turn at all.
  const Grid tutorial[2][2] = {{disk(4, 5, 2), square(5, 5, 3)}, {disk(7, 6, 2), square(0, 2, 4)}};
  for (int ranks : {2, 4}) {
    std::vector<Picture> pictures;
    std::vector<Grid> outputs(static_cast<size_t>(ranks), zeros(kSide, kSide));
    for (int rank = 0; rank < ranks; ++rank) {
      for (int i = 0; i < ranks; ++i) {
        Grid mask = tutorial[rank % 2][i % 2];
        if ((rank >= 2) != (i >= 2)) mask = turned(mask);
        Grid input = times(mask, rank + 1);
        outputs[static_cast<size_t>(i)] = maximum(outputs[static_cast<size_t>(i)], input);
        pictures.push_back({rank, "before reduce_scatter, input_list[" + std::to_string(i + 1) + "]",
                            "before_reduce_scatter_" + std::to_string(i), input});
      }
    }
    for (int rank = 0; rank < ranks; ++rank) {
      pictures.push_back(
          {rank, "after reduce_scatter(max)", "after_reduce_scatter", outputs[static_cast<size_t>(rank)]});
    }
    run_and_check("05_reduce_scatter.lua", ranks, pictures);
  }
}

Test(lua_examples, scatter_sends_row_i_of_rank_0s_list_to_rank_i) {
  for (int ranks : {3, 4}) {
    Grid list = zeros(ranks, 2);
    for (int i = 0; i < 2 * ranks; ++i) list.values[static_cast<size_t>(i)] = i;
    std::vector<Picture> pictures = {{0, "scatter_list", "scatter_list", list}};
    for (int rank = 0; rank < ranks; ++rank) {
      pictures.push_back({rank, "before scatter", "before_scatter", row({0, 0})});
      pictures.push_back({rank, "after scatter(src 0)", "after_scatter", row({2.0 * rank, 2.0 * rank + 1})});
    }
    run_and_check("06_scatter.lua", ranks, pictures);
  }
}

Test(lua_examples, gather_collects_every_ranks_tensor_on_rank_0) {
  for (int ranks : {3, 4}) {
    std::vector<Picture> pictures = {{0, "gather_list before gather", "", zeros(ranks, 3)}};
    Grid gathered = zeros(ranks, 3);
    for (int rank = 0; rank < ranks; ++rank) {
      pictures.push_back({rank, "before gather", "before_gather", row({1.0 * rank, rank + 1.0, rank + 2.0})});
      for (int c = 0; c < 3; ++c) gathered.at(rank, c) = rank + c;
    }
    pictures.push_back({0, "gather_list after gather(dst 0)", "after_gather", gathered});
    run_and_check("07_gather.lua", ranks, pictures);
  }
}

// 08 and 09: every even rank sends [3p + 1, 3p + 2, 3p + 3] (p = rank / 2) to the odd
// rank after it.
std::vector<Picture> pairs(int ranks, const char* send, const char* recv, const std::string& png) {
  std::vector<Picture> pictures;
  for (int rank = 0; rank < ranks; ++rank) {
    double first = 3 * (rank / 2) + 1;
    Grid sent = row({first, first + 1, first + 2});
    std::string what = rank % 2 == 0 ? std::string(send) + "(dst " + std::to_string(rank + 1) + ")"
                                     : std::string(recv) + "(src " + std::to_string(rank - 1) + ")";
    pictures.push_back({rank, "before " + what, "before_" + png, rank % 2 == 0 ? sent : row({0, 0, 0})});
    pictures.push_back({rank, "after " + what, "after_" + png, sent});
  }
  return pictures;
}

Test(lua_examples, send_recv_moves_each_even_ranks_tensor_to_the_next_rank) {
  for (int ranks : {2, 4}) run_and_check("08_send_recv.lua", ranks, pairs(ranks, "send", "recv", "send_recv"));
}

Test(lua_examples, isend_irecv_complete_within_the_wait) {
  for (int ranks : {2, 4}) {
    run_and_check("09_isend_irecv.lua", ranks, pairs(ranks, "isend", "irecv", "isend_irecv"));
    for (int rank = 0; rank < ranks; ++rank) {
      std::string line = "[" + std::to_string(rank) + "] Rank: " + std::to_string(rank) +
                         ", wait(10000) returned true; is_completed() is true.\n";
      cr_expect_eq(tt_count(job.output, line.c_str()), 1, "-n %d: rank %d did not say that its work completed:\n%s",
                   ranks, rank, tt_excerpt(job.output, kNeedles));
    }
  }
}

// The classifier's loss at steps 0, 10, ..., 50 and its accuracy, from rank 0's lines.
struct Training {
  std::vector<double> losses;
  double accuracy;
};

Training train(Runner runner, int ranks) {
  run(runner, "10_classifier.lua", ranks, {});
  cr_assert_eq(job.process.exit_code, 0, "10_classifier -n %d under %s exited %d: %s\n%s", ranks, runner_name(runner),
               job.process.exit_code, tt_job_command(&job), tt_excerpt(job.output, kNeedles));
  Training training{{}, 0};
  char line[256];
  for (int step = 0; step <= 50; step += 10) {
    std::string prefix = "Rank: 0, step " + std::to_string(step) + ", loss ";
    cr_assert(tt_rank_line(job.output, 0, prefix.c_str(), line, sizeof line), "-n %d: no loss at step %d:\n%s", ranks,
              step, tt_excerpt(job.output, kNeedles));
    training.losses.push_back(std::strtod(line, nullptr));
  }
  cr_assert(tt_rank_line(job.output, 0, "Rank: 0, accuracy ", line, sizeof line), "-n %d: no accuracy:\n%s", ranks,
            tt_excerpt(job.output, kNeedles));
  training.accuracy = std::strtod(line, nullptr);
  for (int rank = 0; rank < ranks; ++rank) {
    std::string prefix = "Rank: " + std::to_string(rank) + ", largest difference between the ranks' weights: ";
    cr_assert(tt_rank_line(job.output, rank, prefix.c_str(), line, sizeof line), "-n %d: rank %d did not compare:\n%s",
              ranks, rank, tt_excerpt(job.output, kNeedles));
    cr_expect_str_eq(line, "0.", "-n %d: rank %d's weights differ from another rank's by %s", ranks, rank, line);
  }
  return training;
}

Test(lua_examples, classifier_learns_the_same_on_one_rank_as_on_four) {
  Training alone = train(Runner::kLua, 1);
  Training together = train(Runner::kLua, 4);
  expect_readme_excerpts("10_classifier.lua");
  Training runner = train(Runner::kTutti, 4);
  for (size_t i = 1; i < alone.losses.size(); ++i) {
    cr_expect_lt(alone.losses[i], alone.losses[i - 1], "the loss rose from %g to %g at step %zu", alone.losses[i - 1],
                 alone.losses[i], 10 * i);
  }
  cr_expect_lt(alone.losses.back(), alone.losses.front() / 4, "the loss fell only from %g to %g", alone.losses.front(),
               alone.losses.back());
  cr_expect_gt(alone.accuracy, 85, "accuracy %g%%", alone.accuracy);
  // Equal shards and "avg": the mean of the ranks' means is the mean over every sample.
  cr_expect(together.losses == alone.losses, "the losses on 4 ranks differ from those on 1");
  cr_expect_eq(together.accuracy, alone.accuracy, "accuracy %g%% on 4 ranks, %g%% on 1", together.accuracy,
               alone.accuracy);
  cr_expect(runner.losses == together.losses && runner.accuracy == together.accuracy,
            "tutti's script runner trained otherwise than lua5.4");
}

Test(lua_examples, world_sizes_an_example_cannot_use_are_refused_clearly) {
  struct Case {
    const char* script;
    int ranks;
    const char* message;
  } cases[] = {
      {"01_all_reduce.lua", 5,
       "01_all_reduce: 5 ranks, but there are shapes for 1 to 4; run it with tutti launch -n 4"},
      {"05_reduce_scatter.lua", 5, "05_reduce_scatter: 5 ranks, but there are shapes for 1 to 4"},
      {"08_send_recv.lua", 3, "08_send_recv: 3 ranks, but the ranks send in pairs; run it on an even number"},
      {"10_classifier.lua", 9, "10_classifier: 9 ranks do not split 840 samples evenly"},
  };
  for (const Case& c : cases) {
    for (Runner runner : {Runner::kLua, Runner::kTutti}) {
      run(runner, c.script, c.ranks, {});
      cr_expect_neq(job.process.exit_code, 0, "%s -n %d under %s exited 0", c.script, c.ranks, runner_name(runner));
      cr_expect(std::strstr(job.output, c.message) != nullptr, "%s -n %d under %s: no \"%s\" in\n%s", c.script, c.ranks,
                runner_name(runner), c.message, tt_excerpt(job.output, kNeedles));
    }
  }
  run(Runner::kLua, "02_reduce.lua", 1, {"--png"});
  cr_expect(std::strstr(job.output, "usage: 02_reduce.lua [--png DIR]") != nullptr, "--png without a folder:\n%s",
            tt_excerpt(job.output, kNeedles));
}

TestSuite(cpp_examples, .fini = teardown, .timeout = 180);

// examples/cpp/01_all_reduce prints the pictures examples/lua/01_all_reduce.lua does, and
// refuses 5 ranks with the same message.
Test(cpp_examples, all_reduce_leaves_the_maximum_on_every_rank) {
  const Grid tutorial[2] = {disk(3, 3, 2), square(3, 3, 2)};
  for (int ranks : {1, 2, 4}) {
    run_cpp("01_all_reduce", ranks);
    cr_assert_eq(job.process.exit_code, 0, "01_all_reduce -n %d exited %d: %s\n%s", ranks, job.process.exit_code,
                 tt_job_command(&job), tt_excerpt(job.output, kNeedles));
    Grid result = zeros(kSide, kSide);
    for (int rank = 0; rank < ranks; ++rank) result = maximum(result, drawn(tutorial, rank));
    std::vector<Grid> after(static_cast<size_t>(ranks), result);
    for (const Picture& picture : before_after(tutorial, ranks, "all_reduce", "after all_reduce(max)", after)) {
      expect_printed("examples/cpp/01_all_reduce", ranks, picture);
    }
  }
  run_cpp("01_all_reduce", 5);
  const char* message = "01_all_reduce: 5 ranks, but there are shapes for 1 to 4; run it with tutti launch -n 4";
  cr_expect_neq(job.process.exit_code, 0, "01_all_reduce -n 5 exited 0");
  cr_expect(std::strstr(job.output, message) != nullptr, "01_all_reduce -n 5: no \"%s\" in\n%s", message,
            tt_excerpt(job.output, kNeedles));
}
