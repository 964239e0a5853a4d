// tutti launch's argument parsing and program lookup.
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "launcher/options.h"

using tutti::launcher::parse_options;
using tutti::launcher::ParseResult;
using tutti::launcher::resolve_program;

namespace {

ParseResult parse(std::vector<std::string> args) { return parse_options(args); }

void expect_error(std::vector<std::string> args, const char* fragment) {
  ParseResult result = parse(args);
  cr_assert(result.kind == ParseResult::Kind::kError, "expected an error containing \"%s\"", fragment);
  cr_assert(result.error.find(fragment) != std::string::npos, "error \"%s\" lacks \"%s\"", result.error.c_str(),
            fragment);
}

}  // namespace

Test(options, parses_every_form) {
  ParseResult result =
      parse({"-n", "4", "--timeout", "1.5", "--no-tag-output", "--keep-going", "--", "prog", "-n", "9"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert_eq(result.options.ranks, 4);
  cr_assert_eq(result.options.timeout_ms, 1500);
  cr_assert_not(result.options.tag_output);
  cr_assert(result.options.keep_going);
  cr_assert_eq(result.options.argv.size(), 3u);
  cr_assert(result.options.argv[1] == "-n");

  result = parse({"--np=8", "--timeout=2", "-n3", "prog"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert_eq(result.options.ranks, 3, "the last -n wins");
  cr_assert_eq(result.options.timeout_ms, 2000);
  cr_assert(result.options.tag_output);
  cr_assert_not(result.options.keep_going);
  cr_assert_eq(result.options.restarts, 0, "no restarts unless asked");
  cr_assert_eq(result.options.argv.size(), 1u);

  result = parse({"-n", "4", "--restart", "3", "prog"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert_eq(result.options.restarts, 3);
  cr_assert_eq(parse({"-n", "4", "--restart=0", "prog"}).options.restarts, 0);
}

Test(options, stops_at_the_first_non_option) {
  ParseResult result = parse({"-n", "2", "prog", "--timeout", "x"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert_eq(result.options.timeout_ms, -1);
  cr_assert_eq(result.options.argv.size(), 3u);
}

Test(options, interactive_is_off_unless_asked) {
  cr_assert_not(parse({"-n", "2", "prog"}).options.interactive);
  ParseResult result = parse({"-n", "2", "--interactive", "prog", "--interactive"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert(result.options.interactive);
  cr_assert_eq(result.options.argv.size(), 2u, "the second --interactive is the program's");
  expect_error({"-n", "2", "--interactive=yes", "prog"}, "unknown option");
}

// tutti run: the program is implied, and what follows the options is its arguments.
Test(options, run_implies_the_program) {
  ParseResult result = parse_options(std::vector<std::string>{"-n", "3"}, "/bin/tutti");
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert_eq(result.options.ranks, 3);
  cr_assert(result.options.argv == std::vector<std::string>{"/bin/tutti"});
  result = parse_options(std::vector<std::string>{"-n", "2", "--timeout", "5", "x.lua", "-n", "9"}, "/bin/tutti");
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert(result.options.argv == (std::vector<std::string>{"/bin/tutti", "x.lua", "-n", "9"}));
  result = parse_options(std::vector<std::string>{"x.lua"}, "/bin/tutti");
  cr_assert(result.kind == ParseResult::Kind::kError);
  cr_assert(result.error.find("e.g. tutti run -n 4 script.lua") != std::string::npos, "%s", result.error.c_str());
  result = parse_options(std::vector<std::string>{"-n", "2", "--verbose"}, "/bin/tutti");
  cr_assert(result.error.find("see tutti run --help") != std::string::npos, "%s", result.error.c_str());
}

Test(options, help) {
  cr_assert(parse({"--help"}).kind == ParseResult::Kind::kHelp);
  cr_assert(parse({"-n", "2", "-h"}).kind == ParseResult::Kind::kHelp);
}

Test(options, bad_usage_is_named) {
  expect_error({"-n", "0", "prog"}, "-n 0 is out of range");
  expect_error({"-n", "4097", "prog"}, "in [1, 4096]");
  expect_error({"-n", "-1", "prog"}, "out of range");
  expect_error({"-n", "2x", "prog"}, "-n \"2x\" is not a number");
  expect_error({"-n"}, "-n needs a value");
  expect_error({"--np="}, "is not a number");
  expect_error({"prog"}, "missing -n N");
  expect_error({"-n", "2"}, "missing the program");
  expect_error({"-n", "2", "--"}, "missing the program");
  expect_error({"-n", "2", "--timeout", "-1", "prog"}, "--timeout \"-1\"");
  expect_error({"-n", "2", "--timeout", "nan", "prog"}, "--timeout \"nan\"");
  expect_error({"-n", "2", "--timeout"}, "--timeout needs a value");
  expect_error({"-n", "2", "--verbose", "prog"}, "unknown option \"--verbose\"");
  expect_error({"-n", "2", "--tag-output=yes", "prog"}, "unknown option");
  expect_error({"-n", "2", "--keep-going=1", "prog"}, "unknown option");
  expect_error({"-n", "2", "--restart", "prog"},
               "--restart \"prog\" is not a number of restarts in [0, 1000]; give how many times in all a failed "
               "rank may be started again, e.g. --restart 3");
  expect_error({"-n", "2", "--restart", "-1", "prog"}, "--restart \"-1\"");
  expect_error({"-n", "2", "--restart", "1001", "prog"}, "--restart \"1001\"");
  expect_error({"-n", "2", "--restart"}, "--restart needs a value");
}

Test(options, resolves_programs_in_path_and_by_path) {
  std::string error;
  auto found = resolve_program("sh", "/nonexistent:/bin:/usr/bin", &error);
  cr_assert(found.has_value(), "%s", error.c_str());
  cr_assert(*found == "/bin/sh", "%s", found->c_str());
  cr_assert(resolve_program("/bin/sh", "", &error).has_value());

  cr_assert_not(resolve_program("no-such-program-tutti", "/bin:/usr/bin", &error).has_value());
  cr_assert(error.find("was not found in PATH") != std::string::npos, "%s", error.c_str());
  cr_assert_not(resolve_program("/no/such", "/bin", &error).has_value());
  cr_assert(error.find("does not exist") != std::string::npos, "%s", error.c_str());
  cr_assert_not(resolve_program("/tmp", "/bin", &error).has_value());
  cr_assert(error.find("is a directory") != std::string::npos, "%s", error.c_str());

  char dir[] = "/tmp/tutti-options-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  std::string plain = std::string(dir) + "/plain";
  close(creat(plain.c_str(), 0644));
  cr_assert_not(resolve_program(plain, "", &error).has_value());
  cr_assert(error.find("is not executable") != std::string::npos, "%s", error.c_str());
  cr_assert_not(resolve_program("plain", dir, &error).has_value());
  cr_assert(error.find("not an executable file") != std::string::npos, "%s", error.c_str());
  unlink(plain.c_str());
  rmdir(dir);
}

Test(options, nodes) {
  ParseResult result = parse({"-n", "5", "--nodes", "2", "prog"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert_eq(result.options.nodes, 2);
  cr_assert_eq(parse({"-n", "5", "prog"}).options.nodes, 1, "one node unless asked");
  cr_assert_eq(parse({"--nodes=5", "-n", "5", "prog"}).options.nodes, 5);
  expect_error({"-n", "2", "--nodes", "3", "prog"}, "--nodes 3 is more than the 2 ranks");
  expect_error({"-n", "2", "--nodes", "0", "prog"}, "--nodes \"0\" is not a number of nodes");
  expect_error({"-n", "2", "--nodes", "two", "prog"}, "e.g. --nodes 2");
  expect_error({"-n", "2", "--nodes"}, "--nodes needs a value");
}

Test(options, bind) {
  cr_assert_not(parse({"-n", "2", "prog"}).options.bind_cpu, "unbound unless asked");
  ParseResult result = parse({"-n", "2", "--bind", "cpu", "prog"});
  cr_assert(result.kind == ParseResult::Kind::kRun);
  cr_assert(result.options.bind_cpu);
  cr_assert_not(parse({"-n", "2", "--bind=cpu", "--bind=none", "prog"}).options.bind_cpu, "the last --bind wins");
  expect_error({"-n", "2", "--bind", "core", "prog"}, "--bind \"core\" is not cpu or none; give --bind cpu");
  expect_error({"-n", "2", "--bind"}, "--bind needs a value, cpu or none");
}

// Slurm's block distribution: 5 ranks on 2 nodes are 0-2 and 3-4.
Test(options, node_place_fills_nodes_in_blocks) {
  using tutti::launcher::node_place;
  const int expected[5][3] = {{0, 0, 3}, {0, 1, 3}, {0, 2, 3}, {1, 0, 2}, {1, 1, 2}};
  for (int rank = 0; rank < 5; ++rank) {
    auto place = node_place(rank, 5, 2);
    cr_assert(place.node == expected[rank][0] && place.local_rank == expected[rank][1] &&
                  place.local_size == expected[rank][2],
              "rank %d: node %d local %d of %d", rank, place.node, place.local_rank, place.local_size);
  }
  // Every rank of every layout has a node, and each node's local ranks are 0..size-1.
  for (int ranks = 1; ranks <= 12; ++ranks) {
    for (int nodes = 1; nodes <= ranks; ++nodes) {
      std::vector<int> seen(nodes, 0);
      std::vector<int> said_size(nodes, 0);
      int last_node = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        auto place = node_place(rank, ranks, nodes);
        cr_assert(place.node >= last_node && place.node < nodes, "nodes in rank order");
        last_node = place.node;
        cr_assert_eq(place.local_rank, seen[place.node]++);
        said_size[place.node] = place.local_size;
      }
      for (int node = 0; node < nodes; ++node) {
        cr_assert_eq(seen[node], said_size[node], "node %d of %d with %d ranks", node, nodes, ranks);
        cr_assert(seen[node] == ranks / nodes || seen[node] == ranks / nodes + 1);
      }
    }
  }
}
