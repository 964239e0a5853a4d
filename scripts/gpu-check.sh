#!/usr/bin/env bash
# Runs on a GPU machine what CI cannot: the GPU tests and the device benchmark.
#   scripts/gpu-check.sh [ROUNDS]
# From the repository's root, after scripts/gpu-bundle.sh built BUILD_DIR (default
# build-gpu) on a machine with the CUDA toolkit; python3 must be one with a CUDA
# PyTorch (its NCCL wheel is the NCCL that tutti loads). It runs:
#   - tests/gpu's drivers (every collective x dtype x op through NCCL at 1 rank and
#     the staging path at 2-4 ranks sharing the GPU, stream order, timeouts);
#   - tests/lua/test_cuda.lua at 1 and 2 ranks, through the tutti CLI's Lua;
#   - tests/bindings/python/test_cuda.py at 1 and 2 ranks, where it exists;
#   - the torch.distributed backend's tests and examples, on this machine's PyTorch;
#   - the collective matrix on 2-4 emulated nodes through the selector, which with a
#     core per rank (this machine's) takes the hierarchical forms that win only then;
#   - ROUNDS (default 3) alternating runs of float32 SUM all_reduce on device buffers
#     through tutti-bench -m device, nccl-bench and torch.distributed's NCCL backend
#     (bench/torch_nccl_bench.py), 8 B to 32 MiB, and prints the fastest of each.
# Logs go to BUILD_DIR/gpu-check/. Exits 1 if a test failed or a benchmark's check did.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR="${BUILD_DIR:-build-gpu}"
rounds="${1:-3}"
[ -f "$BUILD_DIR/gpu-env.sh" ] || { echo "scripts/gpu-check.sh: run scripts/gpu-bundle.sh first" >&2; exit 2; }
source "$BUILD_DIR/gpu-env.sh"
logs="$BUILD_DIR/gpu-check"
rm -rf "$logs"
mkdir -p "$logs"
nvidia-smi -L
failed=0

# check NAME BOUND_S COMMAND...: runs it with a time bound, its output to NAME.log.
check() {
  local name=$1 bound=$2
  shift 2
  local started=$SECONDS
  timeout "$bound" "$@" >"$logs/$name.log" 2>&1
  local status=$?
  local verdict=PASS
  [ $status -eq 0 ] || { verdict="FAIL (exit $status)"; failed=1; }
  echo "$verdict $name ($((SECONDS - started)) s)"
  grep -E '^(PASS|FAIL|SKIP)|SKIP:|FAIL |^FAILED|^E  |[0-9]+ (passed|failed|skipped)' "$logs/$name.log" | sed 's/^/    /' | head -20
}

for driver in "$BUILD_DIR"/tests/gpu/gpu.test_*; do
  check "$(basename "$driver")" 400 "$driver"
done
for ranks in 1 2; do
  check "lua.test_cuda.np$ranks" 120 env LUA_PATH="tests/lua/?.lua;;" \
    tutti launch -n "$ranks" --timeout 100 -- tutti tests/lua/test_cuda.lua
  if [ -f tests/bindings/python/test_cuda.py ]; then
    check "python.test_cuda.np$ranks" 200 env PYTHONPATH="$BUILD_DIR/python" \
      tutti launch -n "$ranks" --timeout 180 -- python3 tests/bindings/python/test_cuda.py
  fi
done

# The torch.distributed backend and its examples against this machine's PyTorch (CI
# has only Debian's torch 1.13, whose torchrun cannot start under Python 3.11), with
# the environment tests/bindings/python/CMakeLists.txt gives them there.
torch_env=(env PYTHONPATH="$BUILD_DIR/python:tests/bindings/python" PYTHONDONTWRITEBYTECODE=1
           TUTTI_BIN="$(command -v tutti)" TUTTI_PYTHON="$(command -v python3)" TUTTI_SOURCE_DIR="$PWD")
echo "# python3 is $(python3 -c 'import sys, torch; print(sys.version.split()[0], "with torch", torch.__version__)')"
for test in test_torch_backend test_torch_init test_vs_torch; do
  check "python.$test.np2" 200 "${torch_env[@]}" tutti launch -n 2 --timeout 180 -- \
    python3 -m pytest -q -p no:cacheprovider -x "tests/bindings/python/$test.py"
done
check python.test_torch_examples 250 "${torch_env[@]}" \
  python3 -m pytest -q -p no:cacheprovider tests/bindings/python/test_torch_examples.py

# The selector's choices where every rank has a CPU of its own, found (not forced) on
# this machine's cores: every rank of 8 on 2 emulated nodes says so, then the whole
# collective matrix on 2-4 nodes, through the selector and with the forms forced.
check hierarchy.cpu_per_rank 60 bash -c 'TUTTI_LOG_LEVEL=info tutti launch -n 8 --nodes 2 -- \
  tutti-bench barrier -n 10 -w 1 2>&1 | tee /dev/stderr | grep -c "ranks, a CPU per rank)" | grep -qx 8'
check multiproc.hierarchical_matrix 400 "$BUILD_DIR/tests/multiproc.test_collectives" --jobs 4 \
  --filter 'collectives/@(hierarchical_matrix|uneven_matrix)'

sizes=(-b 8 -e 64M -f 4 -w 50 -n 500)
for ((round = 1; round <= rounds; ++round)); do
  for bench in tutti nccl; do
    timeout 300 tutti launch -n 1 -- "$bench-bench" all_reduce -m device "${sizes[@]}" >>"$logs/$bench.log" 2>&1 ||
      { echo "FAIL $bench-bench, round $round: see $logs/$bench.log"; failed=1; }
  done
  timeout 300 python3 bench/torch_nccl_bench.py "${sizes[@]}" >>"$logs/torch.log" 2>&1 ||
    { echo "FAIL bench/torch_nccl_bench.py, round $round: see $logs/torch.log"; failed=1; }
done
# The fastest time per size of each: harness rows are "[0] size count type op root time ...".
fastest() { awk '$1 == "[0]" && $2 ~ /^[0-9]+$/ {print $2, $7}' "$1"; }
{
  fastest "$logs/tutti.log" | sed 's/^/t /'
  fastest "$logs/nccl.log" | sed 's/^/n /'
  awk '$1 ~ /^[0-9]+$/ {print "p", $1, $2}' "$logs/torch.log"
} | awk '
  { key = $2; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    cell = $1 SUBSEP key; if (!(cell in best) || $3 < best[cell]) best[cell] = $3 }
  END {
    printf "# float32 SUM all_reduce on device buffers, 1 rank, fastest of the rounds; us per call\n"
    printf "%12s %10s %10s %10s %12s %10s\n", "bytes", "tutti", "NCCL", "torch", "tutti-NCCL", "tutti/NCCL"
    for (i = 1; i <= n; ++i) {
      k = order[i]; t = best["t" SUBSEP k]; c = best["n" SUBSEP k]; p = best["p" SUBSEP k]
      printf "%12s %10.2f %10.2f %10.2f %12.2f %10.3f\n", k, t, c, p, t - c, (c > 0 ? t / c : 0)
    }
  }'
exit $failed
