#!/usr/bin/env bash
# What init and destroy cost real processes (issue 21's "tutti launch -n 512"):
#   scripts/bench-launch-init.sh [N...]      (default 64 256 512)
# Builds tutti and tutti-init-bench, then for each N runs `tutti launch -n N` of the
# bench (each rank: tutti_comm_init, then tutti_comm_destroy, timed) and prints one row:
# the whole job's wall time (launch to the last exit: forks, page faults and the
# store included), the slowest rank's init, and each rank's CPU in init and destroy
# (all its threads), mean and largest. BENCH_REPEAT=K runs each N K times. BUILD_DIR
# picks the build (scripts/dev.sh's default: build). On a machine shared with other
# work the numbers mean little: every rank wants a core.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/dev.sh
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64 256 512)
repeat=${BENCH_REPEAT:-1}

install_missing
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2 --target tutti_cli tutti_init_bench tutti_core_round_trip >/dev/null

out="$BUILD_DIR/bench-launch-init"
mkdir -p "$out"
echo "machine: $(nproc) cores, $(uname -r); core round trip: $("$BUILD_DIR/bin/core-round-trip" 2>/dev/null | tail -1 || echo '?')"
echo
echo "| N | job wall | slowest init | init CPU per rank, mean / max | destroy CPU per rank, mean / max |"
echo "| --- | --- | --- | --- | --- |"
for n in "${sizes[@]}"; do
  for ((run = 1; run <= repeat; ++run)); do
    log="$out/n$n-run$run.txt"
    start=$(date +%s%N)
    "$BUILD_DIR/bin/tutti" launch -n "$n" --timeout 600 --no-tag-output -- "$BUILD_DIR/bin/tutti-init-bench" >"$log" 2>&1 ||
      { echo "| $n | failed: see $log | | | |"; continue; }
    end=$(date +%s%N)
    awk -v n="$n" -v wall="$(((end - start) / 1000000))" '
      /^INIT / {
        for (i = 2; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] }
        ++ranks; if (v["init_ms"] > slowest) slowest = v["init_ms"]
        icpu += v["init_cpu_ms"]; if (v["init_cpu_ms"] > imax) imax = v["init_cpu_ms"]
        dcpu += v["destroy_cpu_ms"]; if (v["destroy_cpu_ms"] > dmax) dmax = v["destroy_cpu_ms"]
      }
      END {
        if (ranks != n) { printf "| %d | %d of %d ranks reported | | | |\n", n, ranks, n; exit }
        printf "| %d | %.2f s | %.2f s | %.1f / %.1f ms | %.1f / %.1f ms |\n", n, wall / 1000, slowest / 1000,
               icpu / ranks, imax, dcpu / ranks, dmax
      }' "$log"
  done
done
