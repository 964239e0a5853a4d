"""collectives: tutorial 000's five scripts (all_reduce.py, reduce.py, broadcast.py,
all_gather.py, reduce_scatter.py) and its async broadcast, on backend "tutti".

Changed from the tutorial, and only this: CPU tensors; the processes come from the
launcher (tutti launch, srun, mpirun) instead of mp.spawn, so init_process_group reads
env:// instead of a shared file; two ranks draw shapes as the tutorial's two GPUs do
(more ranks draw the same again); the matrices are printed as digits instead of
plotted with matplotlib. BACKEND (or the environment variable of that name) is the one
word that differs from the same script on gloo. gloo has no reduce_scatter: on gloo
the script says so and skips it.

Run:
  PYTHONPATH=build/python build/bin/tutti launch -n 2 -- /usr/bin/python3 examples/torch/collectives.py
Prints each rank's matrix before and after each operation, such as:
  [0] Rank: 0, after all_reduce (ReduceOp.MAX).
  [0]  0  0  0  0  0  0  0  0  0  0  0
  ...
"""
import os

import numpy as np
import torch
import torch.distributed as dist

import tutti.torch  # registers backend "tutti"

BACKEND = os.environ.get("BACKEND", "tutti")


def rank_print(text):
    print(f"Rank: {dist.get_rank()}, {text}.", flush=True)


def disk(matrix, center=(1, 1), radius=1, value=1.0):
    grid = [slice(-x0, dim - x0) for x0, dim in zip(center, matrix.shape)]
    x_coords, y_coords = np.mgrid[grid]
    mask = torch.tensor(((x_coords / radius) ** 2 + (y_coords / radius) ** 2 <= 1))
    return matrix * (~mask) + mask * value, mask


def square(matrix, topleft=(0, 0), length=1, value=1.0):
    grid = [slice(-x0, dim - x0) for x0, dim in zip(topleft, matrix.shape)]
    x_coords, y_coords = np.mgrid[grid]
    mask = torch.tensor((x_coords <= length) & (x_coords >= 0) & (y_coords >= 0) & (y_coords <= length))
    return matrix * (~mask) + mask * value, mask


def show(matrix, title):
    rows = "\n".join(" ".join(f"{int(v):2d}" for v in row) for row in matrix.tolist())
    print(f"Rank: {dist.get_rank()}, {title}.\n{rows}", flush=True)


dist.init_process_group(backend=BACKEND)
rank = dist.get_rank()
image = torch.zeros((11, 11))
shape = disk(image, (4, 5), 2, rank + 1)[0] if rank % 2 == 0 else square(image, (3, 3), 2, rank + 1)[0]

for name, call in [("all_reduce", lambda t: dist.all_reduce(t, op=dist.ReduceOp.MAX)),
                   ("reduce", lambda t: dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)),
                   ("broadcast", lambda t: dist.broadcast(t, src=0))]:
    tensor = shape.clone()
    show(tensor, f"before {name}")
    call(tensor)
    show(tensor, f"after {name} (ReduceOp.MAX)" if "reduce" in name else f"after {name}")

output_tensors = [torch.zeros_like(image) for _ in range(dist.get_world_size())]
dist.all_gather(output_tensors, shape)
for i, tensor in enumerate(output_tensors):
    show(tensor, f"after all_gather, block {i}")

input_tensors = [disk(image, (4, 5), 2, rank + 1)[0] if i % 2 == 0 else square(image, (5, 5), 3, rank + 1)[0]
                 for i in range(dist.get_world_size())]
output = torch.zeros_like(image)
if BACKEND == "gloo":
    rank_print("gloo has no reduce_scatter; skipped")
else:
    dist.reduce_scatter(output, input_tensors, op=dist.ReduceOp.MAX)
    show(output, "after reduce_scatter (ReduceOp.MAX)")

# single_layer.py's pattern: weights from rank 0, broadcast asynchronously, and the
# summed loss reduced to rank 0 (random data instead of CIFAR-10).
weights = torch.rand((3 * 32 * 32, 10), generator=torch.Generator().manual_seed(0)) if rank == 0 \
    else torch.zeros((3 * 32 * 32, 10))
handle = dist.broadcast(tensor=weights, src=0, async_op=True)
cur_input = torch.rand((16, 3 * 32 * 32), generator=torch.Generator().manual_seed(rank + 1))
handle.wait()
loss = torch.nn.LogSoftmax(dim=1)(torch.matmul(cur_input, weights)).sum(dim=1).mean()
dist.reduce(tensor=loss, dst=0, op=dist.ReduceOp.SUM)
if rank == 0:
    rank_print(f"Final Loss: {float(loss) / dist.get_world_size():.6f}")
dist.destroy_process_group()
