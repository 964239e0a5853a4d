#!/bin/sh
# Every C and C++ file of the tree is as clang-format (.clang-format) writes it, so that
# a diff shows changes, never reflowed lines. To format what you changed:
#   clang-format -i FILE...        or, for the whole tree:
#   git ls-files '*.c' '*.cc' '*.h' '*.hpp' | xargs clang-format -i
#   sh tests/test_format.sh SOURCE_DIR
set -u
cd "$1" || exit 2
command -v clang-format >/dev/null || { echo "test_format: clang-format is missing (scripts/dev.sh installs it)"; exit 1; }
files=$(git ls-files '*.c' '*.cc' '*.h' '*.hpp')
[ -n "$files" ] || { echo "test_format: git lists no C or C++ file in $1"; exit 1; }
if ! report=$(echo "$files" | xargs clang-format --dry-run --Werror 2>&1); then
  echo "$report" | head -n 60
  echo "test_format: these files are not formatted; run clang-format -i on them (the command is at the top of tests/test_format.sh)"
  exit 1
fi
echo "test_format: $(echo "$files" | wc -l) files as clang-format writes them"
