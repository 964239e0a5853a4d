// read_trace_file: whole files, files cut short by a crash, and files that are no trace.
#include <criterion/criterion.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "observe/trace_file.h"

using tutti::observe::read_trace_file;
using tutti::observe::TraceFile;

static std::filesystem::path written(const std::string& text) {
  char name[] = "/tmp/tutti-trace-file-XXXXXX";
  const int fd = mkstemp(name);
  cr_assert(fd >= 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

static std::string message_of(const std::string& text) {
  const auto path = written(text);
  try {
    read_trace_file(path);
  } catch (const std::runtime_error& error) {
    std::filesystem::remove(path);
    return error.what();
  }
  std::filesystem::remove(path);
  return "";
}

Test(trace_file, reads_a_whole_file) {
  TraceFile file = read_trace_file(TUTTI_OBSERVE_DATA_DIR "/job/rank-0.h0.100.json");
  cr_assert_eq(file.events.size(), 18u);
  cr_assert(!file.cut_short);
  cr_assert(!file.partial_line_dropped);
  cr_assert(file.other_data.is_null());
}

Test(trace_file, keeps_what_a_dead_writer_finished) {
  TraceFile file = read_trace_file(TUTTI_OBSERVE_DATA_DIR "/job/rank-3.h1.201.json");
  cr_assert(file.cut_short);
  cr_assert(file.partial_line_dropped);
  cr_assert_eq(file.events.size(), 9u);
  cr_assert_eq(file.events.back()["ph"], "B");
}

Test(trace_file, a_file_cut_between_lines_is_cut_short_without_a_partial_line) {
  const auto path = written("{\"traceEvents\":[\n{\"ph\":\"B\",\"pid\":0,\"tid\":1,\"ts\":1,\"name\":\"barrier\"}\n");
  TraceFile file = read_trace_file(path);
  std::filesystem::remove(path);
  cr_assert(file.cut_short);
  cr_assert(!file.partial_line_dropped);
  cr_assert_eq(file.events.size(), 1u);
}

Test(trace_file, names_what_is_wrong) {
  std::string message = message_of("hello, world\n");
  cr_assert(message.find("is not a trace file") != std::string::npos, "%s", message.c_str());
  message = message_of("{\"traceEvents\":[\n{\"ph\":\"B\"}\n,garbage\n,{\"ph\":\"E\"}\n");
  cr_assert(message.find("line 3 is not a JSON event") != std::string::npos, "%s", message.c_str());
  message = message_of("{\"traceEvents\":[\n],\"displayTimeUnit\":\"ms\"}\n,{\"ph\":\"E\"}\n");
  cr_assert(message.find("the closing line is not the last one") != std::string::npos, "%s", message.c_str());
  std::error_code ignored;
  try {
    read_trace_file("/nonexistent/rank-0.json");
    cr_assert_fail("a missing file was read");
  } catch (const std::runtime_error& error) {
    cr_assert(std::string(error.what()).find("cannot read /nonexistent/rank-0.json") != std::string::npos);
  }
}
