#!/usr/bin/env bash
# What TUTTI_TRACE costs: a 2-rank all_reduce under tutti launch with the trace off and
# on, alternating, in one run:
#   scripts/bench-trace.sh [SIZE [ITERATIONS]]      # 8 bytes, 3000 iterations
#   BASE_BIN=/path/to/other/build/bin scripts/bench-trace.sh
# ITERATIONS x 2 events (a collective's begin and end) should fit one trace ring (8,192
# events) to time recording alone; more, and the trace drops whole operations (and the
# ranks say how many). BASE_BIN adds a third column: the same benchmark from another
# build (e.g. one without tracing), to compare "off" with it. Each line is one round;
# the cores' cache-line round trip (build/bin/core-round-trip) is printed before and
# after, since small messages follow it. Needs a built tree (scripts/dev.sh test).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
size="${1:-8}"
iterations="${2:-3000}"
rounds="${BENCH_ROUNDS:-5}"
bin="${BUILD_DIR:-build}/bin"
folder=$(mktemp -d)
trap 'rm -rf "$folder"' EXIT

# Microseconds per call: the "time" column of tutti-bench's row for SIZE.
time_of() {
  local tree=$1
  shift
  env "$@" timeout 120 "$tree/tutti" launch -n 2 -- "$tree/tutti-bench" all_reduce -b "$size" -e "$size" \
    -n "$iterations" -w 500 2>&1 | awk -v size="$size" '$1 == "[0]" && $2 == size {print $7}'
}

echo "core round trip: $("$bin/core-round-trip" 2>&1 | tail -1)"
echo "all_reduce of $size bytes, 2 ranks, $iterations iterations, us per call"
printf "%-6s %10s %10s %10s\n" round off on "${BASE_BIN:+base}"
for round in $(seq "$rounds"); do
  base=""
  [ -n "${BASE_BIN:-}" ] && base=$(time_of "$BASE_BIN")
  off=$(time_of "$bin")
  rm -rf "$folder/trace"
  on=$(time_of "$bin" TUTTI_TRACE="$folder/trace")
  printf "%-6s %10s %10s %10s\n" "$round" "$off" "$on" "$base"
done
echo "core round trip: $("$bin/core-round-trip" 2>&1 | tail -1)"
