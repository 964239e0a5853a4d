#!/bin/sh
# The C++ wrapper's headers include only tutti.h, tutti_float16.h, tutti_float8.h, each other and the
# standard library, and each compiles alone as C++17 with every warning an error,
# seeing no include folder but the wrapper's and tutti.h's (so that no header of the
# tree can slip in).
#   sh tests/bindings/cpp/test_includes.sh CXX bindings/cpp/include capi/include
set -u
cxx=$1 wrapper=$2 capi=$3
failed=0
for header in "$wrapper"/tutti/*.hpp; do
  name=$(basename "$header")
  # The standard library's names have no '.' and no '/'; ours are listed.
  bad=$(grep -E '^[[:space:]]*#[[:space:]]*include' "$header" |
        grep -Ev '#[[:space:]]*include[[:space:]]+(<[a-z_]+>|"tutti\.h"|"tutti_float16\.h"|"tutti_float8\.h"|"tutti/[a-z0-9_]+\.hpp")[[:space:]]*$')
  if [ -n "$bad" ]; then
    echo "FAIL $name includes more than tutti.h, tutti_float16.h, tutti_float8.h, tutti/*.hpp and the standard library:"
    echo "$bad"
    failed=1
  fi
  if ! printf '#include "tutti/%s"\n#include "tutti/%s"\n' "$name" "$name" |
       "$cxx" -std=c++17 -pedantic -Wall -Wextra -Wshadow -Wconversion -Wsign-conversion -Werror \
              -fsyntax-only -I "$wrapper" -I "$capi" -x c++ -; then
    echo "FAIL $name does not compile alone (twice) as C++17 with -Werror"
    failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "test_includes: every header of $wrapper/tutti stands alone in C++17"
exit "$failed"
