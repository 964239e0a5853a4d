"""torch.distributed's NCCL backend on the sizes and iterations of tutti-bench -m device,
for the table beside tutti-bench and nccl-bench (docs/benchmarks.md): float32 SUM
all_reduce on CUDA tensors, each call followed by torch.cuda.synchronize(), which is
what a blocking tutti call on device buffers does (the host waits for the GPU).

Run on a GPU machine, one process per GPU: with torchrun's variables (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or none, for a world of one:
  python3 bench/torch_nccl_bench.py -b 8 -e 64M -f 4
Rank 0 prints one line per size: "size_bytes time_us" (the slowest rank's average).
"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("-b", type=size_arg, default=8, help="smallest size in bytes")
parser.add_argument("-e", type=size_arg, default=64 << 20, help="largest size in bytes")
parser.add_argument("-f", type=int, default=4, help="size factor between rows")
parser.add_argument("-w", type=int, default=20, help="warm-up iterations per size")
parser.add_argument("-n", type=int, default=200, help="timed iterations per size")
args = parser.parse_args()

if "RANK" not in os.environ:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
rank = int(os.environ["RANK"])
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))

size = args.b
while size <= args.e:
    tensor = torch.ones(max(size // 4, 1), dtype=torch.float32, device="cuda")
    for _ in range(args.w):
        dist.all_reduce(tensor)
        torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(args.n):
        dist.all_reduce(tensor)
        torch.cuda.synchronize()
    took = torch.tensor([(time.perf_counter() - started) / args.n * 1e6], device="cuda")
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    if rank == 0:
        print(f"{size} {took.item():.2f}", flush=True)
    size *= args.f

dist.destroy_process_group()
