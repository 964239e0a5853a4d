#!/usr/bin/env bash
# The rendezvous store against torch's TCPStore, on one workload (bench/store_bench.cc):
#   scripts/bench-store-vs-torch.sh [CLIENTS [CALLS]]      (default 64 100000)
# Installs python3-torch if it is missing (Debian's, run by /usr/bin/python3), builds
# tutti-store-bench, runs tutti with and without a secret and torch, and prints each
# one's calls/s and server peak memory, and the ratios tutti / torch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/dev.sh
clients="${1:-64}"
calls="${2:-100000}"

packages+=(python3-torch)
install_missing
build

out="$BUILD_DIR/bench-store-vs-torch"
mkdir -p "$out"
echo "machine: $(nproc) cores, $(uname -r); torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
"$BUILD_DIR/bin/tutti-store-bench" -c "$clients" -n "$calls" | tee "$out/tutti.txt"
"$BUILD_DIR/bin/tutti-store-bench" -c "$clients" -n "$calls" --no-secret | tee "$out/tutti-no-secret.txt"
/usr/bin/python3 bench/store_bench_torch.py -c "$clients" -n "$calls" | tee "$out/torch.txt"

field() { grep '^RESULT' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
echo
printf '%-16s %12s %16s %16s\n' impl calls/s "server peak MiB" "t/torch calls/s"
torch_rate=$(field "$out/torch.txt" calls_per_s)
for name in tutti tutti-no-secret torch; do
  rate=$(field "$out/$name.txt" calls_per_s)
  hwm=$(field "$out/$name.txt" server_hwm_kib)
  awk -v n="$name" -v r="$rate" -v h="$hwm" -v t="$torch_rate" 'BEGIN { printf "%-16s %12s %16.1f %16.2f\n", n, r, h / 1024, r / t }'
done
