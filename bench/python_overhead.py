"""What a Python call adds to a small collective: an 8-byte all_reduce (2 float32),
timed as tutti-bench times it (warm-up, a barrier, then the average of the timed
iterations, the slowest rank's shown), through one of:

  tutti-numpy     tutti's binding on a NumPy array
  tutti-torch     tutti's binding on a PyTorch CPU tensor
  tutti-async     tutti's binding, async_op=True then Work.wait()
  gloo            torch.distributed's gloo backend (its own rendezvous, over loopback)

Run under the launcher, one mode per job (scripts/bench-python-overhead.sh runs them
all with the C API's tutti-bench and prints the table):
  PYTHONPATH=build/python build/bin/tutti launch -n 2 -- python3 bench/python_overhead.py tutti-numpy
Rank 0 prints "RESULT mode=... us=..." (microseconds per call).
"""
import argparse
import socket
import time

import numpy

import tutti

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("mode", choices=["tutti-numpy", "tutti-torch", "tutti-async", "gloo"])
parser.add_argument("-n", "--iters", type=int, default=1000)
parser.add_argument("-w", "--warmup", type=int, default=100)
args = parser.parse_args()

tutti.init()
rank, size = tutti.rank(), tutti.world_size()

if args.mode == "gloo":
    import torch
    import torch.distributed as dist
    port = numpy.zeros(1, dtype=numpy.int64)
    if rank == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port[0] = probe.getsockname()[1]
    tutti.broadcast(port, src=0)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{int(port[0])}", rank=rank,
                            world_size=size)
    x = torch.ones(2)
    call, sync = (lambda: dist.all_reduce(x)), dist.barrier
elif args.mode == "tutti-torch":
    import torch
    x = torch.ones(2)
    call, sync = (lambda: tutti.all_reduce(x)), tutti.barrier
elif args.mode == "tutti-async":
    x = numpy.ones(2, dtype=numpy.float32)
    call, sync = (lambda: tutti.all_reduce(x, async_op=True).wait()), tutti.barrier
else:
    x = numpy.ones(2, dtype=numpy.float32)
    call, sync = (lambda: tutti.all_reduce(x)), tutti.barrier

for _ in range(args.warmup):
    call()
sync()
start = time.perf_counter()
for _ in range(args.iters):
    call()
elapsed = numpy.array([(time.perf_counter() - start) / args.iters * 1e6])
tutti.all_reduce(elapsed, op="max")
if rank == 0:
    print(f"RESULT mode={args.mode} ranks={size} bytes=8 iters={args.iters} us={elapsed[0]:.2f}",
          flush=True)
if args.mode == "gloo":
    dist.destroy_process_group()
tutti.destroy()
