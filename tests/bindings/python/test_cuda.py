"""PyTorch CUDA tensors through the Python binding, on 1 and 2 ranks (two ranks on one
GPU go through the library's staging path, one rank per GPU through NCCL): every
collective with its values checked against what this file computes, async work with
wait() and wait_stream(), stream order (a kernel on the current stream writes the input
right before the call, behind a long one), mixed CPU and CUDA tensors refused, and list
outputs.

A plain script, not a pytest file, so that it runs in whichever Python has a CUDA
torch, pytest or not:
    PYTHONPATH=build/python build/bin/tutti launch -n 2 -- python3 tests/bindings/python/test_cuda.py
Every rank runs every check in the same order; the first failure ends the job with its
traceback. Without a CUDA device (or torch) it prints one SKIP line saying why and every
rank exits 77, which the launcher passes on and ctest counts as skipped.
"""
import os
import sys

SKIP = 77


def skip(why):
    if os.environ.get("TUTTI_RANK", "0") == "0":
        print(f"SKIP: test_cuda: {why}", flush=True)
    sys.exit(SKIP)


try:
    import torch
except ImportError as error:
    skip(f"torch is not importable ({error}); run it with a Python that has a CUDA torch")
if not torch.cuda.is_available():
    skip(f"no CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False)")

import tutti

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.uint8, torch.int32, torch.int64]
SIZES = [1, 7, 65537]

comm = tutti.init(timeout=120)
RANK, SIZE = tutti.rank(), tutti.world_size()
DEVICE = torch.device("cuda", tutti.local_rank() % torch.cuda.device_count())
torch.cuda.set_device(DEVICE)


def data(rank, count, dtype=torch.float32, salt=0):
    """Rank `rank`'s input on the host: small integers, exact in every dtype, whose sums
    over two ranks stay in int8's range."""
    return ((torch.arange(count) * 7 + rank * 3 + salt) % 20).to(dtype)


def on_gpu(rank, count, dtype=torch.float32, salt=0):
    return data(rank, count, dtype, salt).to(DEVICE)


def each(count, dtype=torch.float32, salt=0):
    return [data(r, count, dtype, salt) for r in range(SIZE)]


def equal(result, expected, what):
    assert result.is_cuda, f"{what}: the result left the GPU ({result.device})"
    got = result.cpu()
    if expected.dtype.is_floating_point:
        ok = torch.allclose(got.double(), expected.double(), rtol=1e-2, atol=1e-2)
    else:
        ok = torch.equal(got, expected)
    assert ok, (f"{what} on rank {RANK}: got {got[:8].tolist()}..., expected "
                f"{expected[:8].tolist()}...")


def reduced(inputs, op):
    stacked = torch.stack([x.double() for x in inputs])
    value = {"sum": stacked.sum(0), "prod": stacked.prod(0), "min": stacked.min(0).values,
             "max": stacked.max(0).values, "avg": stacked.sum(0) / SIZE}[op]
    if not inputs[0].dtype.is_floating_point:
        value = torch.trunc(value)  # tutti.h: an integer AVG truncates
    return value.to(inputs[0].dtype)


def check_all_reduce():
    for dtype in DTYPES:
        for count in SIZES:
            x = on_gpu(RANK, count, dtype)
            tutti.all_reduce(x)
            equal(x, reduced(each(count, dtype), "sum"), f"all_reduce {dtype} x {count}")
    for op in ["prod", "min", "max", "avg"]:
        x = on_gpu(RANK, 1000)
        tutti.all_reduce(x, op=op)
        equal(x, reduced(each(1000), op), f"all_reduce {op}")


def check_rooted():
    for root in range(SIZE):
        x = on_gpu(RANK, 1000, salt=root)
        tutti.broadcast(x, src=root)
        equal(x, data(root, 1000, salt=root), f"broadcast from {root}")
        x = on_gpu(RANK, 1000, torch.int32)
        tutti.reduce(x, dst=root, op="max")
        mine = data(RANK, 1000, torch.int32)
        equal(x, reduced(each(1000, torch.int32), "max") if RANK == root else mine,
              f"reduce to {root}")


def check_gathers():
    x = on_gpu(RANK, 1001)
    outputs = [torch.full((1001,), -1.0, device=DEVICE) for _ in range(SIZE)]
    tutti.all_gather(outputs, x)
    for r in range(SIZE):
        equal(outputs[r], data(r, 1001), f"all_gather tensor_list[{r}]")
    whole = torch.empty(SIZE * 1001, device=DEVICE)
    tutti.all_gather_into_tensor(whole, x)
    equal(whole, torch.cat(each(1001)), "all_gather_into_tensor")
    for root in range(SIZE):
        gather_list = None
        if RANK == root:
            gather_list = [torch.zeros(1001, device=DEVICE) for _ in range(SIZE)]
        tutti.gather(x, gather_list, dst=root)
        if RANK == root:
            for r in range(SIZE):
                equal(gather_list[r], data(r, 1001), f"gather to {root}, gather_list[{r}]")
        scatter_list = [on_gpu(r, 999, salt=root) for r in range(SIZE)] if RANK == root else None
        out = torch.zeros(999, device=DEVICE)
        tutti.scatter(out, scatter_list, src=root)
        equal(out, data(RANK, 999, salt=root), f"scatter from {root}")


def check_reduce_scatter_and_all_to_all():
    # Rank r's block i is data(r, 500, salt=i): rank i receives the blocks i of all.
    blocks = [on_gpu(RANK, 500, salt=i) for i in range(SIZE)]
    out = torch.zeros(500, device=DEVICE)
    tutti.reduce_scatter(out, blocks, op="sum")
    equal(out, reduced(each(500, salt=RANK), "sum"), "reduce_scatter")
    out.zero_()
    tutti.reduce_scatter_tensor(out, torch.cat(blocks), op="sum")
    equal(out, reduced(each(500, salt=RANK), "sum"), "reduce_scatter_tensor")
    outputs = [torch.zeros(500, device=DEVICE) for _ in range(SIZE)]
    tutti.all_to_all(outputs, blocks)
    for r in range(SIZE):
        equal(outputs[r], data(r, 500, salt=RANK), f"all_to_all output_tensor_list[{r}]")
    single = torch.zeros(SIZE * 500, device=DEVICE)
    tutti.all_to_all_single(single, torch.cat(blocks))
    equal(single, torch.cat([data(r, 500, salt=RANK) for r in range(SIZE)]), "all_to_all_single")


def check_point_to_point():
    if SIZE == 1:
        return
    right, left = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    out = torch.zeros(777, device=DEVICE)
    if RANK % 2 == 0:
        tutti.send(on_gpu(RANK, 777), dst=right)
        tutti.recv(out, src=left)
    else:
        tutti.recv(out, src=left)
        tutti.send(on_gpu(RANK, 777), dst=right)
    equal(out, data(left, 777), "send/recv")
    out.zero_()
    works = [tutti.irecv(out, src=left, tag=5),
             tutti.isend(on_gpu(RANK, 777, salt=1), dst=right, tag=5)]
    for work in works:
        work.wait()
    equal(out, data(left, 777, salt=1), "isend/irecv")


def long_kernel():
    """Keeps the current stream busy for a while, so that a collective that did not wait
    for the stream would read its input before the next kernel writes it."""
    busy = torch.randn(2048, 2048, device=DEVICE)
    for _ in range(20):
        busy = busy @ busy
    return busy


def check_stream_order():
    side = torch.cuda.Stream(DEVICE)
    for stream in [torch.cuda.current_stream(DEVICE), side]:
        with torch.cuda.stream(stream):
            x = torch.zeros(1 << 20, device=DEVICE)
            long_kernel()
            x.fill_(RANK + 1)
            tutti.all_reduce(x)
            # A blocking call returns once the GPU has finished: the host may read x.
            expected = torch.full((1 << 20,), float(sum(range(1, SIZE + 1))))
            equal(x, expected, f"all_reduce after a kernel on stream {stream.cuda_stream}")
            outputs = [torch.zeros(1 << 16, device=DEVICE) for _ in range(SIZE)]
            y = torch.zeros(1 << 16, device=DEVICE)
            long_kernel()
            y.fill_(RANK + 10)
            tutti.all_gather(outputs, y)
            for r in range(SIZE):
                equal(outputs[r], torch.full((1 << 16,), float(r + 10)),
                      "all_gather after a kernel")


def check_async():
    # wait(): the host waits, then the list is filled on the current stream.
    x = on_gpu(RANK, 4096)
    outputs = [torch.zeros(4096, device=DEVICE) for _ in range(SIZE)]
    work = tutti.all_gather(outputs, x, async_op=True)
    assert work.wait(timeout=60) is True and work.is_completed()
    for r in range(SIZE):
        equal(outputs[r], data(r, 4096), f"async all_gather tensor_list[{r}]")
    # wait_stream(): a side stream waits on the GPU, the host goes on; the consumer
    # kernel on that stream sees the result.
    side = torch.cuda.Stream(DEVICE)
    x = torch.zeros(1 << 20, device=DEVICE)
    long_kernel()
    x.fill_(RANK + 1)
    work = tutti.all_reduce(x, async_op=True)
    work.wait_stream(side)
    with torch.cuda.stream(side):
        doubled = x * 2
    side.synchronize()
    equal(doubled, torch.full((1 << 20,), 2.0 * sum(range(1, SIZE + 1))), "x * 2 after wait_stream")
    assert work.wait() is True
    # wait_stream() with lists: the copies out run on the stream that waited.
    blocks = [on_gpu(RANK, 300, salt=i) for i in range(SIZE)]
    outputs = [torch.zeros(300, device=DEVICE) for _ in range(SIZE)]
    work = tutti.all_to_all(outputs, blocks, async_op=True)
    work.wait_stream()
    torch.cuda.current_stream(DEVICE).synchronize()
    for r in range(SIZE):
        equal(outputs[r], data(r, 300, salt=RANK), f"async all_to_all output_tensor_list[{r}]")
    work.wait()
    works = [tutti.broadcast(on_gpu(RANK, 100, salt=k), src=k % SIZE, async_op=True)
             for k in range(4)]
    for work in works:
        work.wait()


def check_mixed_refused():
    for call, needle in [
            (lambda: tutti.all_gather_into_tensor(torch.zeros(SIZE * 4, device=DEVICE),
                                                  torch.zeros(4)),
             f"input_tensor is on cpu but output_tensor is on {DEVICE}"),
            (lambda: tutti.all_gather([torch.zeros(4)] * SIZE, torch.zeros(4, device=DEVICE)),
             f"tensor_list[0] is on cpu but tensor is on {DEVICE}"),
            (lambda: tutti.reduce_scatter(torch.zeros(4, device=DEVICE), [torch.zeros(4)] * SIZE),
             f"input_list[0] is on cpu but output is on {DEVICE}")]:
        try:
            call()
        except tutti.TuttiInvalidArgument as error:
            assert needle in error.message and "same device" in error.message, error.message
        else:
            raise AssertionError(f"a call mixing CPU and CUDA tensors was not refused ({needle})")


def check_group():
    with tutti.split(0) as group:
        x = on_gpu(RANK, 100)
        group.all_reduce(x)
        equal(x, reduced(each(100), "sum"), "all_reduce on a split")
    # The world still works on the host, as before.
    y = data(RANK, 100)
    tutti.all_reduce(y)
    assert torch.equal(y, reduced(each(100), "sum"))


for check in [check_all_reduce, check_rooted, check_gathers, check_reduce_scatter_and_all_to_all,
              check_point_to_point, check_stream_order, check_async, check_mixed_refused,
              check_group]:
    check()
    tutti.barrier()
    if RANK == 0:
        print(f"test_cuda: {check.__name__} passed on {SIZE} rank(s)", flush=True)
tutti.destroy()
if RANK == 0:
    print(f"test_cuda: all passed on {SIZE} rank(s), {DEVICE} "
          f"({torch.cuda.get_device_name(DEVICE)})")
