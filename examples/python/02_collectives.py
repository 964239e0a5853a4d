"""02_collectives: the torch.distributed collectives tutorial's scripts (all_reduce.py,
reduce.py, broadcast.py, all_gather.py, reduce_scatter.py) one after the other, with
PyTorch tensors and tutti for the collectives. Every rank draws the tutorial's disk or
square, with value rank + 1, in an 11x11 matrix, and prints it before and after each
collective. Reductions take the maximum, as in the tutorial. On 2 ranks the matrices
are the tutorial's; ranks 2 and 3 draw rank 0's and rank 1's shapes turned half a turn.

Run (1 to 4 ranks; the tutorial runs 2), from the repository root after building:
  PYTHONPATH=build/python build/bin/tutti launch -n 2 -- python3 examples/python/02_collectives.py

Prints, for each rank and collective, the matrix (or matrices) before and after:
  [0] Rank: 0, before all_reduce.
  [0] 0 0 0 0 0 0 0 0 0 0 0
  [0] 0 0 0 1 0 0 0 0 0 0 0       rank 0: a disk of radius 2 with value 1
  ...
  [1] Rank: 1, after all_reduce(max).
  [1] 0 0 0 0 0 0 0 0 0 0 0
  [1] 0 0 0 1 0 0 0 0 0 0 0
  [1] 0 0 1 1 1 0 0 0 0 0 0
  [1] 0 1 1 2 2 2 0 0 0 0 0       rank 1's square (value 2) over rank 0's disk
"""
import sys

import torch

import tutti


def disk(center, radius, value):
    """The tutorial's disk: the cells within radius of center get value."""
    rows, cols = torch.meshgrid(torch.arange(11), torch.arange(11), indexing="ij")
    mask = ((rows - center[0]) / radius) ** 2 + ((cols - center[1]) / radius) ** 2 <= 1
    return torch.where(mask, float(value), 0.0)


def square(topleft, length, value):
    """The tutorial's square: length + 1 cells on a side from topleft."""
    rows, cols = torch.meshgrid(torch.arange(11), torch.arange(11), indexing="ij")
    rows, cols = rows - topleft[0], cols - topleft[1]
    mask = (rows >= 0) & (rows <= length) & (cols >= 0) & (cols <= length)
    return torch.where(mask, float(value), 0.0)


def shape(rank, tutorial_shapes):
    """Rank 0's and 1's shape from the tutorial; ranks 2 and 3 turn them half a turn."""
    image = tutorial_shapes[rank % 2](rank + 1)
    return torch.rot90(image, 2) if rank >= 2 else image


def show(rank, label, matrix):
    rows = "\n".join(" ".join(str(int(v)) for v in row) for row in matrix.tolist())
    print(f"Rank: {rank}, {label}.\n{rows}", flush=True)


tutti.init()
rank, size = tutti.rank(), tutti.world_size()
if size > 4:
    sys.exit(f"02_collectives: {size} ranks, but there are shapes for 1 to 4; run it with "
             f"tutti launch -n 4")

image = shape(rank, [lambda v: disk((3, 3), 2, v), lambda v: square((3, 3), 2, v)])
show(rank, "before all_reduce", image)
tutti.all_reduce(image, op="max")
show(rank, "after all_reduce(max)", image)

image = shape(rank, [lambda v: disk((4, 5), 2, v), lambda v: square((3, 3), 2, v)])
show(rank, "before reduce", image)
tutti.reduce(image, dst=0, op="max")
show(rank, "after reduce(max) to rank 0", image)

image = shape(rank, [lambda v: disk((4, 5), 2, v), lambda v: square((3, 3), 2, v)])
show(rank, "before broadcast", image)
tutti.broadcast(image, src=0)
show(rank, "after broadcast from rank 0", image)

image = shape(rank, [lambda v: disk((4, 5), 2, v), lambda v: disk((7, 6), 2, v)])
gathered = [torch.zeros(11, 11) for _ in range(size)]
show(rank, "all_gather input", image)
tutti.all_gather(gathered, image)
for i, block in enumerate(gathered):
    show(rank, f"after all_gather, block {i}", block)

inputs = [shape(rank, [lambda v: disk((4, 5), 2, v), lambda v: disk((7, 6), 2, v)]),
          shape(rank, [lambda v: square((5, 5), 3, v), lambda v: square((0, 2), 4, v)])]
inputs += [torch.rot90(m, 1).contiguous() for m in inputs]  # a quarter turn: two more
inputs = inputs[:size]
output = torch.zeros(11, 11)
for i, block in enumerate(inputs):
    show(rank, f"reduce_scatter input {i}", block)
tutti.reduce_scatter(output, inputs, op="max")
show(rank, "after reduce_scatter(max)", output)

tutti.destroy()
