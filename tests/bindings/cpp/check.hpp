// Assertions and a runner for the C++ wrapper's tests, which are plain C++17 programs
// run as ranks under tutti launch. A failed check throws, the runner prints the test,
// the rank and the message and exits 1, the launcher stops the other ranks, and ctest
// shows the line. Every test gets the world communicator, named "cpp".
#ifndef TUTTI_TESTS_BINDINGS_CPP_CHECK_HPP
#define TUTTI_TESTS_BINDINGS_CPP_CHECK_HPP

#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tutti/tutti.hpp"

namespace check {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define CHECK(condition, what)                                                                            \
  ((condition) ? void(0)                                                                                  \
               : throw ::check::Failure(std::string("line ") + std::to_string(__LINE__) + ": " + (what) + \
                                        " (" #condition " is false)"))

template <class T>
std::string show(const std::vector<T>& values) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? " " : "") << +values[i];
  out << ']';
  return out.str();
}

// Element by element; for floats, tolerance is relative to max(1, |expected|).
template <class T>
void equal(const std::vector<T>& actual, const std::vector<T>& expected, const std::string& what,
           double tolerance = 0) {
  bool same = actual.size() == expected.size();
  for (size_t i = 0; same && i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]), e = static_cast<double>(expected[i]);
    same = (a > e ? a - e : e - a) <= tolerance * (e < -1 ? -e : e > 1 ? e : 1);
  }
  if (!same) throw Failure(what + ": got " + show(actual) + ", expected " + show(expected));
}

// Runs f, which must throw E with status and a message containing `contains`; returns
// the message.
template <class E, class F>
std::string raises(tutti_status status, const std::string& contains, F f, const std::string& what) {
  try {
    f();
  } catch (const E& e) {
    const std::string message = e.what();
    if (e.status() != status) {
      throw Failure(what + ": threw " + e.name() + " (" + message + "), expected " + tutti_status_name(status));
    }
    if (message.find(contains) == std::string::npos) {
      throw Failure(what + ": the message \"" + message + "\" does not contain \"" + contains + "\"");
    }
    return message;
  } catch (const std::exception& e) {
    throw Failure(what + ": threw another exception than expected: " + e.what());
  }
  throw Failure(what + ": did not throw (expected " + tutti_status_name(status) + " with \"" + contains + "\")");
}

struct Test {
  const char* name;
  void (*run)(tutti::Comm& world);
};

// Joins the job, runs the tests in order on every rank, and returns main's exit code.
inline int run(const char* program, std::initializer_list<Test> tests) {
  int rank = -1;
  const char* current = "tutti::Comm::init";
  try {
    tutti::Comm world = tutti::Comm::init(tutti::Config().name("cpp"));
    rank = world.rank();
    for (const Test& test : tests) {
      current = test.name;
      test.run(world);
    }
    std::printf("%s: rank %d of %d: %zu tests passed\n", program, rank, world.size(), tests.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: FAILED %s on rank %d: %s\n", program, current, rank, e.what());
    return 1;
  }
}

}  // namespace check

#endif  // TUTTI_TESTS_BINDINGS_CPP_CHECK_HPP
