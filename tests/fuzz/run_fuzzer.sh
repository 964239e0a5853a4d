#!/bin/sh
# One ctest entry of the fuzz step: runs a libFuzzer target for a bounded time over a
# copy of its seed corpus (the fuzzer adds what it finds to the copy; the repository's
# corpus stays as committed), and fails on a crash, a leak, a slow input or memory
# over the limit, leaving the input that did it in ARTIFACT_DIR.
#   run_fuzzer.sh FUZZER CORPUS_DIR DICTIONARY SECONDS ARTIFACT_DIR
set -eu
fuzzer=$1 corpus=$2 dictionary=$3 seconds=$4 artifacts=$5
name=$(basename "$fuzzer")

work=$(mktemp -d "${TMPDIR:-/tmp}/tutti-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$corpus"/* "$work"/
mkdir -p "$artifacts"

# -timeout: one input taking over 10 s is a hang. -rss_limit_mb: a parser that
# allocates in proportion to what the input claims rather than what it holds.
# -print_final_stats: executions and coverage in the test's log.
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -dict="$dictionary" -artifact_prefix="$artifacts/$name-" "$work" || status=$?
if [ "$status" -ne 0 ]; then
  echo "run_fuzzer.sh: $name failed (exit $status); the input is in $artifacts/ (see above)." >&2
  echo "Reproduce with: $fuzzer $artifacts/$name-<crash|leak|timeout|oom>-<sha1>" >&2
  exit 1
fi
