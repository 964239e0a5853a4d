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
for file in $(find runtime -name '*.h' -o -name '*.cc' | sort); do
  own=$(echo "$file" | cut -d/ -f2)
  own_rank=$(rank_of "$own")
  [ -n "$own_rank" ] || continue
  for included in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file"); do
    case "$included" in
      runtime/*)
        other=$(echo "$included" | cut -d/ -f2)
        other_rank=$(rank_of "$other")
        if [ -z "$other_rank" ] || [ "$other_rank" -gt "$own_rank" ]; then
          echo "FAIL $file includes $included: runtime/$other is not beneath runtime/$own in README.md's Layout table"
          failed=1
        fi ;;
      capi/* | bindings/* | launcher/* | repl/*)
        echo "FAIL $file includes $included: the runtime sits beneath $(echo "$included" | cut -d/ -f1)/"
        failed=1 ;;
    esac
  done
done
bad=$(grep -rn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"runtime/' bindings examples)
[ -z "$bad" ] || { echo "FAIL the bindings and examples see tutti.h only, not runtime/:"; echo "$bad"; failed=1; }
[ "$failed" -eq 0 ] && echo "test_layers: every include in runtime/ points down ($(echo $order | tr ' ' '<'))"
exit "$failed"
