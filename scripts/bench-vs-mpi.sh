#!/usr/bin/env bash
# tutti against Open MPI (Debian's 4.1), side by side on this machine:
#   scripts/bench-vs-mpi.sh [WORLD_SIZES [OPS [BENCH ARGS...]]]
#   scripts/bench-vs-mpi.sh                          # "2 4", the four ops below, -b 8 -e 64M -f 4
#   scripts/bench-vs-mpi.sh "2" "all_reduce" -d float64 -o max
# Installs what is missing (apt, idempotent), builds tutti (scripts/dev.sh) and
# mpi-bench (mpicc), runs build/bin/tutti-bench under tutti launch and mpi-bench under
# mpirun with the same arguments, and prints one merged table per (op, world size).
# Both programs are one harness (bench/harness.c): same buffers, iteration counts,
# timing and check. Raw outputs stay in $BUILD_DIR/bench-vs-mpi/. Each table ends
# with the cores' cache-line round trip (build/bin/core-round-trip) before and after
# each run: small messages follow it, and on a VM it can change by 4x between runs.
# Environment: BUILD_DIR (default build); BENCH_ENV, "VAR=value ..." given to the
# ranks of both libraries (e.g. glibc's MALLOC_MMAP_MAX_=0, see docs/benchmarks.md);
# BENCH_TIMEOUT, seconds per run (default 300); BENCH_REPEAT, runs of each library per
# table, alternating, of which each row shows the fastest (default 1). On a machine
# shared with other work, a rank that loses its core for a moment stalls its peers, and
# one run can be many times slower than the next, for either library; the best of a
# few alternating runs compares the libraries rather than the moments they ran in.
# BENCH_STAT=median shows each row's typical run instead, what a user meets (the middle
# run's; of an even number, the slower middle one: give BENCH_REPEAT an odd number),
# and each library's fastest and slowest run beside it.
# BENCH_NODES=K runs tutti's ranks on K emulated nodes (tutti launch --nodes K: shared
# memory only within a node, UCX between them), and Open MPI's over its UCX PML (--mca
# pml ucx), whose point-to-point then goes wholly through UCX; BENCH_UCX_TLS sets UCX_TLS
# for both (tcp: the network between machines; sm: UCX's shared memory), e.g.
#   BENCH_NODES=2 BENCH_UCX_TLS=tcp scripts/bench-vs-mpi.sh 2 all_reduce -b 8 -e 2M -f 16
# BENCH_BIND=cpu runs each rank of both libraries on one CPU (tutti launch --bind cpu,
# mpirun --bind-to core), where by default neither is bound.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/dev.sh" # install_missing and build; cds to the repo root

world_sizes="${1:-2 4}"
ops="${2:-all_reduce broadcast all_gather reduce_scatter}"
shift $(($# < 2 ? $# : 2))
bench_args=("$@")
[ ${#bench_args[@]} -gt 0 ] || bench_args=(-b 8 -e 64M -f 4)
timeout_s="${BENCH_TIMEOUT:-300}"
repeat="${BENCH_REPEAT:-1}"
stat="${BENCH_STAT:-best}"
case "$stat" in
  best | median) ;;
  *) echo "BENCH_STAT=$stat: give best or median" >&2 && exit 2 ;;
esac
read -r -a bench_env <<<"${BENCH_ENV:-}"
nodes="${BENCH_NODES:-1}"
bind="${BENCH_BIND:-none}"
case "$bind" in
  none) mpi_bind=none ;;
  cpu) mpi_bind=core:overload-allowed ;;
  *) echo "BENCH_BIND=$bind: give cpu or none" >&2 && exit 2 ;;
esac
[ -z "${BENCH_UCX_TLS:-}" ] || bench_env+=("UCX_TLS=$BENCH_UCX_TLS")

packages+=(openmpi-bin libopenmpi-dev)
[ "$nodes" -eq 1 ] || packages+=(ucx-utils)
install_missing
build
bin="$BUILD_DIR/bin"
mpicc -O2 -std=c99 -Wall -Wextra -I capi/include bench/mpi_bench.c bench/harness.c -lm -o "$bin/mpi-bench"
results="$BUILD_DIR/bench-vs-mpi"
mkdir -p "$results"

# Open MPI on one node, by default (Debian's openmpi-mca-params.conf excludes the UCX
# PML): the ob1 PML, the vader shared-memory BTL with CMA single copy for large
# messages, and the tuned collectives. --mca btl self,vader names that path and keeps
# tcp out of it. --bind-to none: Open MPI would pin each rank to a core (and to a
# socket past 2 ranks) while tutti launch pins nothing; unpinned, both get the same
# scheduling, and pinning ranks on a machine with fewer cores than ranks, or shared
# with other work, would measure placement instead of the library. BENCH_BIND=cpu pins
# both, a rank to a CPU. --oversubscribe lets mpirun start more ranks than cores, as
# tutti launch does.
# With emulated nodes, Open MPI's UCX PML instead: its messages, as tutti's between
# nodes, all go through UCX, over the transports UCX_TLS allows. (Debian's
# openmpi-mca-params.conf says pml=^ucx, which --mca pml ucx overrides; and Open MPI
# 4.1 takes the UCX PML only over InfiniBand devices unless pml_ucx_tls and
# pml_ucx_devices say "any".)
mpi_env=()
for assignment in "${bench_env[@]}"; do mpi_env+=(-x "$assignment"); done
mpi_path=(--mca btl self,vader)
[ "$nodes" -eq 1 ] || mpi_path=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl self)
run_mpi() {
  timeout -k 10 "$timeout_s" mpirun --allow-run-as-root --oversubscribe --bind-to "$mpi_bind" "${mpi_path[@]}" \
    "${mpi_env[@]}" -np "$1" "$bin/mpi-bench" "${@:2}"
}
round_trip() {
  local trip
  trip=$("$bin/core-round-trip" 2>/dev/null) || trip="?"
  echo "${trip% ns}"
}
run_tutti() {
  env "${bench_env[@]}" "$bin/tutti" launch -n "$1" --nodes "$nodes" --bind "$bind" --no-tag-output --timeout "$timeout_s" -- \
    "$bin/tutti-bench" "${@:2}"
}

# UCX's own floor between emulated nodes: ucx_perftest's 8-byte tag ping-pong over the
# same UCX_TLS, a server and a client on loopback, half a round trip. Prints "typical
# µs (average µs)" or "?"; $1 adds perftest's options (-e: failure reports, as tutti's
# endpoints ask them; UCX's shared memory refuses it). Bounded, and only the server
# it started is stopped.
perftest_latency() {
  local port=$((20000 + RANDOM % 12000)) server line try
  env "${bench_env[@]}" timeout -k 5 60 ucx_perftest -t tag_lat -s 8 -n 20000 -p "$port" $1 >/dev/null 2>&1 &
  server=$!
  # A client that came before the server listened fails at once: try again, a few
  # times, while the server lives.
  for try in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.2
    line=$(env "${bench_env[@]}" timeout -k 5 60 ucx_perftest 127.0.0.1 -t tag_lat -s 8 -n 20000 -p "$port" $1 \
      2>/dev/null | awk '/^Final:/ {printf "%s µs (average %s)", $3, $4}') || true
    [ -z "$line" ] && kill -0 "$server" 2>/dev/null || break
  done
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  echo "${line:-?}"
}

# The machine's ceiling for the reducing collectives on one node, from 1 MiB up (below,
# it measures caches and the threads' meeting more than the machine): the fastest one
# pass over the same bytes can be (bench/reduction_ceiling.c), float32 sum, at the
# sizes the benchmark's -b, -e and -f give. Empty for other ops, other dtypes or ops,
# and between emulated nodes.
ceiling() {
  local op=$1 n=$2 min=8 max=$((64 << 20)) factor=4 other=0 i
  case "$op" in all_reduce | reduce_scatter) ;; *) return 0 ;; esac
  [ "$nodes" -eq 1 ] || return 0
  for ((i = 0; i < ${#bench_args[@]}; i++)); do
    case "${bench_args[i]}" in
      -b) min="${bench_args[i + 1]}" ;;
      -e) max="${bench_args[i + 1]}" ;;
      -f) factor="${bench_args[i + 1]}" ;;
      -d) [ "${bench_args[i + 1]}" = float32 ] || other=1 ;;
      -o) [ "${bench_args[i + 1]}" = sum ] || other=1 ;;
    esac
  done
  [ "$other" -eq 0 ] || return 0
  "$bin/reduction-ceiling" "$op" "$n" -b "$min" -e "$max" -f "$factor" | awk '!/^#/ && $1 >= 1048576'
}

# Rows are: size count type redop root time algbw busbw #wrong iters. Both rows of a
# size moved the same bytes, so the busbw ratio is the inverse of the time ratio (taken
# from the times, which keep more digits than small busbw values). Of several runs,
# each size shows the fastest run's row (BENCH_STAT=best) or the middle one's (median,
# with the range of every run's time beside it), and the most wrong elements of any run.
merge() {
  awk -v title="$1" -v stat="$stat" '
    function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0 || a + 0 == 0) ? "-" : sprintf("%.3g", a / b) }
    function cell(v) { return v == "" ? "-" : v }
    # The run of (w, s) that the statistic picks, by time: runs are sorted in place.
    function pick(w, s,    k, j, t, b, chosen) {
      for (k = 2; k <= runs[w, s]; k++)
        for (j = k; j > 1 && times[w, s, j - 1] + 0 > times[w, s, j] + 0; j--) {
          t = times[w, s, j]; times[w, s, j] = times[w, s, j - 1]; times[w, s, j - 1] = t
          b = bws[w, s, j]; bws[w, s, j] = bws[w, s, j - 1]; bws[w, s, j - 1] = b
        }
      chosen = stat == "median" ? int(runs[w, s] / 2) + 1 : 1
      us[w, s] = times[w, s, chosen]; bw[w, s] = bws[w, s, chosen]
      spread[w, s] = runs[w, s] > 1 ? times[w, s, 1] "-" times[w, s, runs[w, s]] : "-"
    }
    which == "c" && NF >= 2 { ceil[$1] = $2; next }
    /^#/ || NF < 10 { next }
    {
      if (!($1 in seen)) { seen[$1] = 1; sizes[++n] = $1 }
      k = ++runs[which, $1]; times[which, $1, k] = $6; bws[which, $1, k] = $8
      if (!((which, $1) in wrong) || $9 + 0 > wrong[which, $1] + 0) wrong[which, $1] = $9
    }
    END {
      for (i = 2; i <= n; i++)
        for (j = i; j > 1 && sizes[j - 1] + 0 > sizes[j] + 0; j--) { t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t }
      for (i = 1; i <= n; i++) {
        if (("t", sizes[i]) in runs) pick("t", sizes[i])
        if (("m", sizes[i]) in runs) pick("m", sizes[i])
      }
      print "## " title
      printf "# %10s %12s %12s %7s %13s %13s %7s %11s %10s %7s", "size", "tutti busbw", "MPI busbw", "ratio",
        "tutti time", "MPI time", "ratio", "#wrong", "ceiling", "ratio"
      if (stat == "median") printf " %21s %21s", "tutti runs", "MPI runs"
      printf "\n# %10s %12s %12s %7s %13s %13s %7s %11s %10s %7s", "(B)", "(GB/s)", "(GB/s)", "t/M", "(us)", "(us)", "t/M",
        "tutti/MPI", "(us)", "t/c"
      if (stat == "median") printf " %21s %21s", "(us, min-max)", "(us, min-max)"
      printf "\n"
      for (i = 1; i <= n; i++) {
        s = sizes[i]
        printf "  %10s %12s %12s %7s %13s %13s %7s %11s %10s %7s", s, cell(bw["t", s]), cell(bw["m", s]),
          s + 0 == 0 ? "-" : ratio(us["m", s], us["t", s]), cell(us["t", s]), cell(us["m", s]), ratio(us["t", s], us["m", s]),
          cell(wrong["t", s]) "/" cell(wrong["m", s]), cell(ceil[s]), ratio(us["t", s], ceil[s])
        if (stat == "median") printf " %21s %21s", cell(spread["t", s]), cell(spread["m", s])
        printf "\n"
      }
    }' which=t "$2" which=m "$3" which=c "$4"
}

echo "# machine: $(nproc) cores ($(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(uname -sr)," \
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); a bare system call: $("$bin/core-round-trip" --syscall 2>/dev/null || echo '?')"
echo "# $("$bin/tutti" version 2>&1 | head -1), $(mpirun --version 2>&1 | head -1)," \
  "UCX $(pkg-config --modversion ucx 2>/dev/null || echo '?'), $(gcc --version | head -1)"
echo "# arguments: ${bench_args[*]}${bench_env[*]:+; rank environment: ${bench_env[*]}}$([ "$repeat" -gt 1 ] && echo "; $([ "$stat" = median ] && echo "the middle" || echo best) of $repeat alternating runs")"
if [ "$nodes" -gt 1 ]; then
  echo "# emulated nodes: $nodes (tutti launch --nodes $nodes; Open MPI: --mca pml ucx)"
  echo "# UCX's floor between them, ucx_perftest -t tag_lat -s 8, one way: $(perftest_latency "");" \
    "with -e (failure reports, as tutti's endpoints ask): $(perftest_latency -e)"
fi
[ "$bind" = none ] || echo "# ranks bound: a CPU each (tutti launch --bind cpu; Open MPI: --bind-to $mpi_bind)"
echo "# ratio t/M: tutti / MPI (busbw above 1 and time below 1 favour tutti); t/c: tutti / the machine's"
echo "#   ceiling (reduction-ceiling: one pass over the same bytes, one node, 1 MiB up)"
echo "# core round trip: a cache line between two cores and back (bench/core_round_trip.c), which"
echo "#   small messages follow; compare rows taken at like values (a VM's can change by 4x)"

failures=0
for n in $world_sizes; do
  for op in $ops; do
    out="$results/$op-$n"
    : >"$out.tutti.txt"
    : >"$out.mpi.txt"
    trips=""
    for ((run = 1; run <= repeat; run++)); do
      for side in tutti mpi; do
        status=0
        before=$(round_trip)
        "run_$side" "$n" "$op" "${bench_args[@]}" >>"$out.$side.txt" 2>&1 || status=$?
        trips+=" $side $before/$(round_trip)"
        if [ "$status" -ne 0 ]; then
          failures=$((failures + 1))
          echo "# $side-bench $op on $n ranks failed (exit $status); last lines of $out.$side.txt:"
          tail -n 5 "$out.$side.txt" | sed 's/^/#   /'
        fi
      done
    done
    what=$(sed -n 's/^# [a-z-]* [a-z_]*: .*, dtype \([a-z0-9]*\), op \([a-z]*\),.*/\1 \2/p' "$out.tutti.txt" "$out.mpi.txt" | head -1)
    case "$op" in all_reduce | reduce | reduce_scatter) ;; barrier) what="" ;; *) what="${what% *}" ;; esac
    echo
    ceiling "$op" "$n" >"$out.ceiling.txt"
    merge "$op on $n ranks${what:+ ($what)}" "$out.tutti.txt" "$out.mpi.txt" "$out.ceiling.txt"
    echo "# core round trip before/after each run (ns):$trips"
  done
done
[ "$failures" -eq 0 ] || { echo "# $failures run(s) failed; raw outputs in $results/"; exit 1; }
