// What the fuzz targets share: a property check that stops the run with a message
// libFuzzer shows next to the input that broke it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tutti::fuzz {

// Prints why and aborts: libFuzzer treats the abort as a crash, saves the input as
// crash-<sha1> and exits non-zero, which fails the ctest entry.
[[noreturn]] inline void broken(const std::string& why) {
  std::fprintf(stderr, "fuzz property broken: %s\n", why.c_str());
  std::abort();
}

inline void require(bool holds, const std::string& why) {
  if (!holds) broken(why);
}

}  // namespace tutti::fuzz
