#!/usr/bin/env bash
# The Python binding's call overhead: an 8-byte all_reduce on 2 ranks through the C API
# (tutti-bench), through the binding (NumPy, PyTorch, async), and through
# torch.distributed's gloo, one after the other in one run (bench/python_overhead.py):
#   scripts/bench-python-overhead.sh [ITERS]      (default 2000)
# Prints one row per way: microseconds per call, and the ratio to the C API.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/dev.sh
iters="${1:-2000}"

install_missing
build

tutti="$BUILD_DIR/bin/tutti"
run() { PYTHONPATH="$BUILD_DIR/python" "$tutti" launch -n 2 --timeout 300 -- "$@"; }
echo "machine: $(nproc) cores, $(uname -r); $(/usr/bin/python3 --version); torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"

c_us=$(run "$BUILD_DIR/bin/tutti-bench" all_reduce -b 8 -e 8 -d float32 -n "$iters" -w $((iters / 10)) |
       awk '$1 == "[0]" && $2 == 8 { print $7 }')
printf '%-24s %10s %10s\n' way "us/call" "x C API"
printf '%-24s %10.2f %10.2f\n' "C API (tutti-bench)" "$c_us" 1
for mode in tutti-numpy tutti-torch tutti-async gloo; do
  us=$(run /usr/bin/python3 bench/python_overhead.py "$mode" -n "$iters" -w $((iters / 10)) |
       sed -n 's/.*RESULT .* us=\([0-9.]*\).*/\1/p')
  printf '%-24s %10.2f %10.2f\n' "python $mode" "$us" "$(awk -v a="$us" -v b="$c_us" 'BEGIN { print a / b }')"
done
