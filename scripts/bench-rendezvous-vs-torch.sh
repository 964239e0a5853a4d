#!/usr/bin/env bash
# N simulated ranks' init and destroy through the rendezvous store, against torch's
# TCPStore driven the same way (issue 21's table):
#   scripts/bench-rendezvous-vs-torch.sh [N...]      (default 1000 2000 5000 10000)
# Installs python3-torch if it is missing (Debian's, run by /usr/bin/python3), builds
# tutti-rendezvous-bench, then for each N runs tutti (with its job secret) and torch
# (bench/rendezvous_bench_torch.py), alternating, and prints one row per N. Raw outputs
# stay in $BUILD_DIR/bench-rendezvous-vs-torch/. BENCH_ARGS="-p 8 --ranks-per-node 4"
# passes options to both. On a machine shared with other work, run it twice.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/dev.sh
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 2000 5000 10000)
read -r -a extra <<<"${BENCH_ARGS:-}"

packages+=(python3-torch)
install_missing
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2 --target tutti_rendezvous_bench

out="$BUILD_DIR/bench-rendezvous-vs-torch"
mkdir -p "$out"
echo "machine: $(nproc) cores, $(uname -r); torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
# A run that fails still leaves its output (and its RESULT line, with failed=) for the table.
for n in "${sizes[@]}"; do
  "$BUILD_DIR/bin/tutti-rendezvous-bench" -n "$n" "${extra[@]}" | tee "$out/tutti-$n.txt" || true
  /usr/bin/python3 bench/rendezvous_bench_torch.py -n "$n" "${extra[@]}" | tee "$out/torch-$n.txt" || true
done

field() { grep '^RESULT' "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo
echo "wall: first connect to last rank done; CPU and memory: the store's process (torch's memory per"
echo "rank leaves out the interpreter and libtorch it held before); requests and reply bytes: tutti's"
echo "counted by its store, torch's are the store calls its clients made and the value bytes GET returned."
printf '%7s %9s %9s %7s %9s %9s %9s %9s %8s %8s %9s %9s %s\n' N "tutti s" "torch s" t/torch \
  "t CPU s" "T CPU s" "t KiB/rk" "T KiB/rk" "t req/rk" "T req/rk" "t B/rk" "T B/rk" failed
for n in "${sizes[@]}"; do
  t="$out/tutti-$n.txt"
  T="$out/torch-$n.txt"
  awk -v n="$n" -v ts="$(field "$t" seconds)" -v Ts="$(field "$T" seconds)" \
    -v tc="$(field "$t" store_cpu_s)" -v Tc="$(field "$T" store_cpu_s)" \
    -v tm="$(field "$t" store_kib_per_rank)" -v Tm="$(field "$T" store_kib_per_rank)" \
    -v tr="$(field "$t" requests_per_rank)" -v Tr="$(field "$T" requests_per_rank)" \
    -v tb="$(field "$t" reply_bytes_per_rank)" -v Tb="$(field "$T" reply_bytes_per_rank)" \
    -v tf="$(field "$t" failed)" -v Tf="$(field "$T" failed)" \
    'function v(x) { return x == "" ? "-" : x }
     BEGIN {
       ratio = (ts != "" && Ts != "" && Ts > 0) ? sprintf("%.2f", ts / Ts) : "-"
       failed = (tf != "" && tf != "0") || (Tf != "" && Tf != "0") || ts == "" || Ts == "" ? \
                sprintf("tutti %s, torch %s", v(tf), v(Tf)) : ""
       printf "%7s %9s %9s %7s %9s %9s %9s %9s %8s %8s %9s %9s %s\n", n, v(ts), v(Ts), ratio, v(tc), v(Tc),
              v(tm), v(Tm), v(tr), v(Tr), v(tb), v(Tb), failed
     }'
done
