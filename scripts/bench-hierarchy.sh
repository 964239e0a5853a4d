#!/usr/bin/env bash
# The hierarchical forms against every flat algorithm, on emulated nodes:
#   scripts/bench-hierarchy.sh [LAYOUTS [OPS [BENCH ARGS...]]]
#   scripts/bench-hierarchy.sh "8:2 16:4" "reduce gather" -b 8 -e 16M -f 8
# LAYOUTS are RANKS:NODES pairs (default "4:2"), run as tutti launch -n RANKS --nodes
# NODES: shared memory within a node, UCX between nodes. For each layout and op it runs
# tutti-bench once with the selector's own choice, once with TUTTI_ALGO=OP=hierarchical
# and once with each flat algorithm the op has (tutti info lists them), one after the
# other in that order, ROUNDS times (BENCH_REPEAT, default 1), and prints, per size, the
# fastest time of each and the flat algorithm that was fastest. The question it answers:
# where does the hierarchy win, so that the selector may take it (selector.cc).
# Meaningful only with a core per rank: on a machine with fewer cores than ranks, the
# ranks that wait within their node take the cores the others need, and the hierarchy
# measures the scheduler (the selector's comments, docs/benchmarks.md).
# Environment: BUILD_DIR (default build; scripts/dev.sh builds it), BENCH_UCX_TLS (UCX_TLS
# between nodes, default tcp), BENCH_TIMEOUT (seconds per run, default 300). Raw outputs
# stay in $BUILD_DIR/bench-hierarchy/.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR="${BUILD_DIR:-build}"
bin="$BUILD_DIR/bin"
[ -x "$bin/tutti-bench" ] || {
  echo "scripts/bench-hierarchy.sh: no $bin/tutti-bench; build it first: cmake --build $BUILD_DIR --target tutti_cli tutti_bench" >&2
  exit 2
}
layouts="${1:-4:2}"
ops="${2:-all_reduce broadcast reduce all_gather reduce_scatter gather scatter all_to_all barrier}"
shift $(($# < 2 ? $# : 2))
bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(-b 8 -e 16M -f 8)
tls="${BENCH_UCX_TLS:-tcp}"
timeout_s="${BENCH_TIMEOUT:-300}"
rounds="${BENCH_REPEAT:-1}"
results="$BUILD_DIR/bench-hierarchy"
mkdir -p "$results"
failed=0

# The flat algorithms of each op, as selector.cc's implemented() lists them.
flat_algorithms() {
  case "$1" in
    all_reduce) echo recursive_doubling ring rabenseifner ;;
    broadcast) echo binomial scatter_all_gather ;;
    reduce) echo binomial ring ;;
    all_gather) echo bruck ring recursive_doubling ;;
    reduce_scatter) echo pairwise ring recursive_halving ;;
    gather | scatter) echo binomial linear ;;
    all_to_all) echo pairwise linear ;;
    barrier) echo dissemination ;;
    *) echo "scripts/bench-hierarchy.sh: unknown op $1" >&2 && exit 2 ;;
  esac
}

echo "# $(nproc) CPUs; UCX_TLS=$tls between nodes; tutti-bench ${bench_args[*]}; $rounds round(s); us per call"
for layout in $layouts; do
  ranks=${layout%%:*} nodes=${layout##*:}
  for op in $ops; do
    choices=(selector hierarchical $(flat_algorithms "$op"))
    for choice in "${choices[@]}"; do : >"$results/$layout.$op.$choice.log"; done
    for ((round = 1; round <= rounds; ++round)); do
      for choice in "${choices[@]}"; do
        algo=()
        [ "$choice" = selector ] || algo=(TUTTI_ALGO="$op=$choice")
        log="$results/$layout.$op.$choice.log"
        env UCX_TLS="$tls" "${algo[@]}" timeout -k 10 "$timeout_s" \
          "$bin/tutti" launch -n "$ranks" --nodes "$nodes" -- "$bin/tutti-bench" "$op" "${bench_args[@]}" >>"$log" 2>&1 ||
          { echo "FAIL $layout $op $choice, round $round: see $log"; failed=1; }
      done
    done
    echo
    echo "## $op, $ranks ranks on $nodes nodes"
    # Rows of tutti-bench: "[0] bytes count type op root time ..."; the fastest per size.
    for choice in "${choices[@]}"; do
      awk -v c="$choice" '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print c, $2, $7}' "$results/$layout.$op.$choice.log"
    done | awk -v flats="$(flat_algorithms "$op")" '
      { cell = $1 SUBSEP $2; if (!(cell in t) || $3 < t[cell]) t[cell] = $3
        if (!($2 in seen)) { seen[$2] = 1; sizes[++n] = $2 } }
      END {
        k = split(flats, flat, " ")
        printf "%10s %10s %12s %10s  %-20s %s\n", "bytes", "selector", "hierarchical", "best flat", "(which)", "hier/flat"
        for (i = 1; i <= n; ++i) {
          s = sizes[i]; best = ""; which = "-"
          for (j = 1; j <= k; ++j) {
            cell = flat[j] SUBSEP s
            if ((cell in t) && (best == "" || t[cell] < best)) { best = t[cell]; which = flat[j] }
          }
          h = ((("hierarchical" SUBSEP s) in t) ? t["hierarchical" SUBSEP s] : "-")
          printf "%10s %10s %12s %10s  %-20s %s\n", s, t["selector" SUBSEP s], h, best, which,
                 (best > 0 && h != "-" ? sprintf("%.2f", h / best) : "-")
        }
      }'
  done
done
exit $failed
