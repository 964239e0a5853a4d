"""03_point_to_point: the point-to-point tutorial's snippets, as examples/c/03 does in
C: blocking send and recv around a ring, then the non-blocking isend and irecv (post
both, poll is_completed() while doing something else, then wait(timeout)), then the
tutorial's scatter and gather with their lists on the root only.

Run (2 ranks or more):
  PYTHONPATH=build/python build/bin/tutti launch -n 3 -- python3 examples/python/03_point_to_point.py

Prints, for each rank r of n:
  [r] Rank: r, blocking: got [100 + r-1] from rank r-1.
  [r] Rank: r, non-blocking: got [200 + r-1] from rank r-1, polled k times.
  [r] Rank: r, scatter: received [2r, 2r + 1].
  [0] Rank: 0, gather: [[0, 1, 2], [1, 2, 3], ...].
"""
import torch

import tutti

tutti.init()
rank, size = tutti.rank(), tutti.world_size()
if size < 2:
    raise SystemExit("03_point_to_point: needs 2 ranks or more; run it with tutti launch -n 3")
right, left = (rank + 1) % size, (rank - 1) % size


def say(text):
    print(f"Rank: {rank}, {text}.", flush=True)


# Blocking: even ranks send first and odd ranks receive first. Were every rank to send
# first, each could wait for a receive that its neighbour never reaches (the
# tutorial's deadlock trap); rank 1 receiving first breaks that cycle.
got = torch.zeros(1, dtype=torch.int64)
if rank % 2 == 0:
    tutti.send(torch.tensor([100 + rank]), dst=right)
    tutti.recv(got, src=left)
else:
    tutti.recv(got, src=left)
    tutti.send(torch.tensor([100 + rank]), dst=right)
say(f"blocking: got {got.tolist()} from rank {left}")

# Non-blocking: both posted at once, in any order, on every rank; the buffers belong
# to the operations until wait says they are done.
outgoing, incoming = torch.tensor([200 + rank]), torch.zeros(1, dtype=torch.int64)
receiving = tutti.irecv(incoming, src=left)
sending = tutti.isend(outgoing, dst=right)
polls = 0
while not receiving.is_completed():
    polls += 1  # the tutorial's "other work" would go here
receiving.wait(timeout=30)
sending.wait(timeout=30)
say(f"non-blocking: got {incoming.tolist()} from rank {left}, polled {polls} times")

# The tutorial's scatter and gather: the lists exist on the root only.
scatter_list = [torch.tensor([i, i + 1]) for i in range(0, 2 * size, 2)] if rank == 0 else None
tensor = torch.empty(2, dtype=torch.int64)
tutti.scatter(tensor, scatter_list, src=0)
say(f"scatter: received {tensor.tolist()}")

gather_list = [torch.zeros(3, dtype=torch.int64) for _ in range(size)] if rank == 0 else None
tutti.gather(torch.tensor([0 + rank, 1 + rank, 2 + rank]), gather_list, dst=0)
if rank == 0:
    say(f"gather: {[t.tolist() for t in gather_list]}")
tutti.destroy()
