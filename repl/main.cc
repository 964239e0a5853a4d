// The `tutti` command: subcommands for running jobs and inspecting settings, and
// otherwise Lua, on every rank of the job: `tutti script.lua [args]` runs a script,
// a bare `tutti` the REPL (STYLE G24, after lua.c).
#include <cxxabi.h>
#include <execinfo.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "launcher/launcher.h"
#include "observe/top.h"
#include "observe/trace_command.h"
#if TUTTI_CLI_LUA
#include "repl/repl_loop.h"
#include "repl/script_runner.h"
#endif
#include "runtime/collectives/selector.h"
#include "runtime/common/error.h"
#include "runtime/common/settings.h"

#if !defined(TUTTI_CLI_VERSION) || !defined(TUTTI_CLI_LUA)
#error "TUTTI_CLI_VERSION and TUTTI_CLI_LUA must be defined by the build (repl/CMakeLists.txt)"
#endif

namespace {

constexpr int kExitUsage = 2;

// std::terminate's report, as one write: libstdc++'s own prints it in pieces, and when
// another thread ends the process meanwhile only its first words come out ("terminate
// called after throwing an instance of '"), without the exception that did it. The
// call stack follows, for the bug report.
[[noreturn]] void report_uncaught() {
  std::string text = "tutti: internal error: std::terminate called";
  if (std::type_info* type = abi::__cxa_current_exception_type()) {
    int status = 0;
    char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
    text += std::string(" after an uncaught ") + (status == 0 ? name : type->name());
    std::free(name);
    try {
      throw;
    } catch (const std::exception& e) {
      text += std::string(": ") + e.what();
    } catch (...) {
    }
  }
  const long thread = syscall(SYS_gettid);
  text += thread == getpid() ? " (main thread)" : " (thread " + std::to_string(thread) + ", not the main one)";
  text += "; please report it, with this call stack:\n";
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::abort();
}

using Args = std::span<const std::string>;

int run_launch(Args args) { return tutti::launcher::launch_main(args); }

int run_top(Args args) { return tutti::observe::top_main(args); }

#if TUTTI_CLI_LUA
int run_run(Args args) { return tutti::launcher::run_main(args); }
#endif

int run_trace(Args args) { return tutti::observe::run_trace(args); }

int run_version(Args) {
  std::printf("tutti %s\n", TUTTI_CLI_VERSION);
  return 0;
}

// Prints every TUTTI_* setting with its type, default and current value, and checks
// the integers: an unparsable one is named, with the accepted forms, and exits 1.
int run_info(Args) {
  std::printf("tutti %s settings, from the environment (tutti launch sets the rank variables per rank)\n\n",
              TUTTI_CLI_VERSION);
  std::printf("%-22s %-9s %-9s %s\n", "NAME", "TYPE", "DEFAULT", "VALUE");
  int invalid = 0;
  for (const auto& setting : tutti::settings::table()) {
    auto value = tutti::settings::text(setting.name);
    const char* shown = value ? value->c_str() : "(unset)";
    if (tutti::settings::is_secret(setting)) shown = value ? "(set)" : "(not set)";
    std::printf("%-22s %-9s %-9s %s\n", setting.name, setting.type,
                *setting.default_value ? setting.default_value : "-", shown);
    std::printf("    %s\n", setting.doc);
    if (value && std::strcmp(setting.type, "int") == 0) {
      try {
        tutti::settings::integer(setting.name, INT64_MIN, INT64_MAX);
      } catch (const tutti::Error&) {
        // The reader of each variable names its own range; here only the form is checked.
        std::printf("    invalid: \"%s\" is not an integer; set %s to one, or unset it\n", value->c_str(),
                    setting.name);
        ++invalid;
      }
    }
  }
  std::printf("\nalgorithms TUTTI_ALGO can force (collective=algorithm,...):\n");
  for (int kind = 0; kind < tutti::kKindCount; ++kind) {
    auto collective = static_cast<tutti::Kind>(kind);
    if (tutti::is_point_to_point(collective)) continue;
    std::printf("    %s\n", tutti::collectives::Selector::choices(collective).c_str());
  }
  return invalid == 0 ? 0 : 1;
}

int run_help(Args);

struct Command {
  const char* name;
  int (*run)(Args args);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"launch", run_launch, "run N ranks of a program on this machine (tutti launch --help)"},
#if TUTTI_CLI_LUA
    {"run", run_run, "run a Lua script, or the REPL, on N ranks of this machine (tutti run --help)"},
#endif
    {"top", run_top, "show what every rank of a running job is doing (tutti top --help)"},
    {"trace", run_trace, "merge, show or draw trace files (tutti trace --help)"},
    {"info", run_info, "print the TUTTI_* settings with their current values"},
    {"version", run_version, "print the version"},
    {"help", run_help, "print this help"},
};

void print_usage(FILE* out) {
  std::fprintf(out, "usage: tutti COMMAND [ARGS...]\n");
#if TUTTI_CLI_LUA
  std::fprintf(out,
               "       tutti SCRIPT.lua [ARGS...]    run a Lua script on every rank of the job\n"
               "       tutti                         the Lua REPL, on every rank of the job\n"
               "  e.g. tutti run -n 4 script.lua, tutti run -n 4, srun -n 4 tutti script.lua\n");
#else
  std::fprintf(out, "  (built without Lua: no scripts and no REPL; TUTTI_BUILD_REPL)\n");
#endif
  std::fprintf(out, "\ncommands:\n");
  for (const auto& command : kCommands) std::fprintf(out, "  %-8s %s\n", command.name, command.summary);
}

int run_help(Args) {
  print_usage(stdout);
  return 0;
}

#if TUTTI_CLI_LUA
int run_lua(Args args) {
  if (args.empty()) return tutti::repl::run_repl();
  if (args[0].size() > 1 && args[0][0] == '-') {
    std::fprintf(stderr, "tutti: unknown option \"%s\"; see tutti help (give a script named so as ./%s)\n",
                 args[0].c_str(), args[0].c_str());
    return kExitUsage;
  }
  return tutti::repl::run_script(args);
}
#else
int run_lua(Args) {
  std::fprintf(stderr,
               "tutti: this tutti was built without Lua (TUTTI_BUILD_REPL=OFF, or lua5.4 or libedit missing), "
               "so it runs no scripts and no REPL; use tutti launch -- PROGRAM, or rebuild with TUTTI_BUILD_REPL=ON\n");
  return kExitUsage;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(report_uncaught);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty()) {
    const std::string& first = args[0];
    if (first == "--help" || first == "-h") return run_help({});
    if (first == "--version") return run_version({});
    for (const auto& command : kCommands) {
      if (first == command.name) return command.run(Args(args).subspan(1));
    }
  }
  return run_lua(args);
}
