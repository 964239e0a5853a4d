#!/bin/sh
# The runtime's folders are layers: README.md's Layout table lists them bottom up, and a
# file includes only its own folder and the folders listed above it there (CONTRIBUTING.md).
# Nothing in runtime/ includes capi/, bindings/, launcher/ or repl/; the bindings and
# the examples see tutti.h only, never runtime/.
#   sh tests/runtime/test_layers.sh SOURCE_DIR
set -u
cd "$1" || exit 2
order=$(sed -n 's/^| `runtime\/\([a-z_]*\)` |.*/\1/p' README.md)
[ -n "$order" ] || { echo "test_layers: README.md's Layout table lists no runtime/ folder"; exit 1; }
rank_of() { echo "$order" | grep -nx "$1" | cut -d: -f1; }
failed=0
for dir in runtime/*/; do
  dir=${dir#runtime/}; dir=${dir%/}
  [ -n "$(rank_of "$dir")" ] || { echo "FAIL runtime/$dir is not in README.md's Layout table"; failed=1; }
done
# Every include of every file in one awk: a few processes per include took 36 s of
# ctest where each process start costs milliseconds (a PVM guest).
find runtime -name '*.h' -o -name '*.cc' | sort | xargs awk -v order="$order" '
  BEGIN { n = split(order, names, "\n"); for (i = 1; i <= n; ++i) rank[names[i]] = i }
  FNR == 1 { split(FILENAME, parts, "/"); own = parts[2]; own_rank = (own in rank) ? rank[own] : 0 }
  own_rank && /^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
    included = $0; sub(/^[^"]*"/, "", included); sub(/".*/, "", included)
    split(included, part, "/")
    if (part[1] == "runtime") {
      if (!(part[2] in rank) || rank[part[2]] > own_rank) {
        print "FAIL " FILENAME " includes " included ": runtime/" part[2] " is not beneath runtime/" own \
              " in README.md'"'"'s Layout table"
        failed = 1
      }
    } else if (part[1] ~ /^(capi|bindings|launcher|repl)$/) {
      print "FAIL " FILENAME " includes " included ": the runtime sits beneath " part[1] "/"
      failed = 1
    }
  }
  END { exit failed }' || failed=1
bad=$(grep -rn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"runtime/' bindings examples)
[ -z "$bad" ] || { echo "FAIL the bindings and examples see tutti.h only, not runtime/:"; echo "$bad"; failed=1; }
[ "$failed" -eq 0 ] && echo "test_layers: every include in runtime/ points down ($(echo $order | tr ' ' '<'))"
exit "$failed"
