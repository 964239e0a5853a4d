// A process forked from a traced one (os.fork, fork() without exec) writes nothing into
// its parent's file: not the events the parent had not yet written, not its own, not
// the file's end when it exits; and it traces into a file of its own if it starts
// tracing again. Each test is a process of its own (Criterion), so each starts untraced.
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/trace/trace.h"

namespace trace = tutti::trace;

namespace {

std::string temp_folder() {
  char pattern[] = "/tmp/tutti-test-trace-fork-XXXXXX";
  cr_assert_not_null(mkdtemp(pattern));
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string trace_path(const std::string& folder, pid_t pid) {
  return folder + "/rank-0.testhost." + std::to_string(pid) + ".json";
}

int wait_exit_code(pid_t child) {
  int status = 0;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status), "the child did not exit normally");
  return WEXITSTATUS(status);
}

}  // namespace

Test(trace_fork, a_forked_child_leaves_the_parents_file_alone, .timeout = 20) {
  const std::string folder = temp_folder();
  cr_assert(trace::start(0, "testhost:1", folder));
  trace::instant(trace::kControlTrack, "before fork, written", "test", "");
  trace::flush();
  trace::instant(trace::kControlTrack, "before fork, not yet written", "test", "");
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    // Recorded while untraced: dropped. exit() runs the atexit handlers, finish among them.
    trace::instant(trace::kControlTrack, "in the child", "test", "");
    trace::flush();
    exit(trace::on() ? 1 : 0);
  }
  cr_assert_eq(wait_exit_code(child), 0, "tracing was still on in the child");
  trace::instant(trace::kControlTrack, "after fork", "test", "");
  trace::finish();
  const std::string text = read_file(trace_path(folder, getpid()));
  cr_expect_eq(count(text, "\"before fork, written\""), 1u, "%s", text.c_str());
  cr_expect_eq(count(text, "\"before fork, not yet written\""), 1u, "%s", text.c_str());
  cr_expect_eq(count(text, "\"after fork\""), 1u, "%s", text.c_str());
  cr_expect_eq(count(text, "\"in the child\""), 0u, "%s", text.c_str());
  cr_expect_eq(count(text, "\"displayTimeUnit\""), 1u, "the file was ended twice:\n%s", text.c_str());
  cr_expect_eq(text.substr(text.size() - 2), "}\n", "%s", text.c_str());
  std::filesystem::remove_all(folder);
}

Test(trace_fork, a_forked_child_that_traces_again_writes_its_own_file, .timeout = 20) {
  const std::string folder = temp_folder();
  cr_assert(trace::start(0, "testhost:1", folder));
  trace::instant(trace::kControlTrack, "in the parent", "test", "");
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    if (!trace::start(0, "testhost:2", folder)) _exit(1);
    trace::instant(trace::kControlTrack, "in the child", "test", "");
    exit(0);  // finish, at exit, ends the child's file
  }
  cr_assert_eq(wait_exit_code(child), 0, "the child could not start tracing again");
  trace::finish();
  const std::string parent = read_file(trace_path(folder, getpid()));
  const std::string own = read_file(trace_path(folder, child));
  cr_expect_eq(count(parent, "\"in the parent\""), 1u, "%s", parent.c_str());
  cr_expect_eq(count(parent, "\"in the child\""), 0u, "%s", parent.c_str());
  cr_expect_eq(count(own, "\"in the child\""), 1u, "%s", own.c_str());
  cr_expect_eq(count(own, "\"in the parent\""), 0u, "the parent's unwritten events came along:\n%s", own.c_str());
  cr_expect_eq(count(own, "\"displayTimeUnit\""), 1u, "%s", own.c_str());
  std::filesystem::remove_all(folder);
}
