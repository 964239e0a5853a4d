#!/usr/bin/env bash
# backend="tutti" against backend="gloo", in the same processes (a gloo group of the same
# ranks beside tutti's default group), on CPU tensors:
#   - dist.all_reduce of 8 B, 1 MiB and 16 MiB: time per call and bus bandwidth;
#   - the per-call cost of each layer for an 8-byte all_reduce: the C call through
#     ctypes, the plain binding (tutti.Comm.all_reduce), dist.all_reduce on tutti
#     (blocking, and async_op=True + wait);
#   - DDP training steps per second of a small MLP and a small CNN.
# at 2 and 4 ranks (tutti launch). Timings mean something only on a quiet machine:
# every rank is a process, and each wants a core.
#
# usage: scripts/bench-torch-backend.sh [--quick] [RANKS...]     (default ranks: 2 4)
#   BUILD=build-torch   the build folder (default: build)
#   PYTHON=/usr/bin/python3   a Python with torch
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
python=${PYTHON:-/usr/bin/python3}
quick=0
if [[ ${1:-} == --quick ]]; then
  quick=1
  shift
fi
ranks=("$@")
[[ ${#ranks[@]} -gt 0 ]] || ranks=(2 4)
[[ -x $build/bin/tutti ]] || { echo "bench-torch-backend: no $build/bin/tutti; build first (or set BUILD=)" >&2; exit 2; }

bench=$(mktemp --suffix=.py)
trap 'rm -f "$bench"' EXIT
cat >"$bench" <<'EOF'
import ctypes
import sys
import time

import torch
import torch.distributed as dist

import tutti.torch
from tutti import _capi

QUICK = sys.argv[1] == "1"
dist.init_process_group("tutti")
rank, size = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")
tutti_group = dist.distributed_c10d._get_default_group()
torch.manual_seed(0)


def timed(call, repeats):
    for _ in range(max(3, repeats // 10)):
        call()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    elapsed = torch.tensor([time.perf_counter() - start])
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time
    return float(elapsed) / repeats


def say(text):
    if rank == 0:
        print(text, flush=True)


say(f"\n## {size} ranks (torch {torch.__version__}, tutti {tutti.version()})\n")
say("| dist.all_reduce | tutti | gloo | tutti / gloo throughput |")
say("| --- | --- | --- | --- |")
for label, nbytes, repeats in (("8 B", 8, 2000), ("1 MiB", 1 << 20, 200), ("16 MiB", 16 << 20, 20)):
    repeats = max(5, repeats // 10) if QUICK else repeats
    x = torch.ones(nbytes // 4)
    ours = timed(lambda: dist.all_reduce(x), repeats)
    theirs = timed(lambda: dist.all_reduce(x, group=gloo), repeats)
    bus = 2 * (size - 1) / size * nbytes  # bytes each rank sends in a ring all_reduce
    say(f"| {label} | {ours * 1e6:.1f} us ({bus / ours / 1e9:.2f} GB/s) | "
        f"{theirs * 1e6:.1f} us ({bus / theirs / 1e9:.2f} GB/s) | {theirs / ours:.2f}x |")

x = torch.zeros(2)
comm = tutti_group.comm
handle, lib = comm._handle, _capi.lib
repeats = 500 if QUICK else 5000
layers = [
    ("C call through ctypes (tutti_all_reduce, blocking)",
     lambda: lib.tutti_all_reduce(handle, x.data_ptr(), x.data_ptr(), 2, _capi.DTYPE_FLOAT32, 0, None)),
    ("plain binding: tutti.Comm.all_reduce(x)", lambda: comm.all_reduce(x)),
    ("dist.all_reduce(x), backend tutti", lambda: dist.all_reduce(x)),
    ("dist.all_reduce(x, async_op=True).wait()", lambda: dist.all_reduce(x, async_op=True).wait()),
    ("dist.all_reduce(x), gloo", lambda: dist.all_reduce(x, group=gloo)),
]
costs = [(name, timed(call, repeats)) for name, call in layers]
# torch.distributed's own Python, with the backend stubbed to return a finished Work:
# what any backend pays, not tutti.torch.
tutti_group.allreduce = lambda tensors, opts=None: tutti_group._done
costs.append(("torch's wrapper alone (backend stubbed out)", timed(lambda: dist.all_reduce(x), repeats)))
del tutti_group.allreduce
say("\n| 8-byte all_reduce, per call | us | over the plain binding |")
say("| --- | --- | --- |")
plain = costs[1][1]
for name, cost in costs:
    say(f"| {name} | {cost * 1e6:.1f} | {(cost - plain) * 1e6:+.1f} |")


def mlp():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(),
                               torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))


def cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(32 * 8 * 8, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


say("\n| DDP steps/s | tutti | gloo | tutti / gloo |")
say("| --- | --- | --- | --- |")
for label, make, shape in (("MLP 784-512-512-10, batch 64", mlp, (64, 1, 28, 28)),
                           ("CNN 2 conv + 2 fc, 32x32x3, batch 32", cnn, (32, 3, 32, 32))):
    rates = []
    for group in (None, gloo):
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(make(), process_group=group)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        data, labels = torch.randn(*shape), torch.randint(10, (shape[0],))

        def step():
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(data), labels).backward()
            optimizer.step()
        rates.append(1 / timed(step, 5 if QUICK else 50))
    say(f"| {label} | {rates[0]:.1f} | {rates[1]:.1f} | {rates[0] / rates[1]:.2f}x |")
dist.destroy_process_group()
EOF

for n in "${ranks[@]}"; do
  OMP_NUM_THREADS=1 PYTHONPATH=$build/python "$build/bin/tutti" launch -n "$n" --timeout 900 --no-tag-output -- \
    "$python" "$bench" "$quick"
done
