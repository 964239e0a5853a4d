"""tutti against torch.distributed's gloo backend: the same random collectives, on the
same inputs, through both, must give the same results: exactly for integers and for
data that is only moved, within the dtype's rounding for reduced floats (the two may
add in different orders, and tutti reduces float16 and bfloat16 in float32).

Where gloo lacks something, the reference is made from what it has, and says so:
reduce_scatter is gloo's all_reduce and this rank's block of it; AVG is gloo's SUM
divided by the world size (truncated for integers, as tutti.h promises); bfloat16 is
reduced by gloo in float32 and rounded, and moved by gloo as its bytes;
all_gather_into_tensor is gloo's all_gather concatenated.

Every rank draws the same sequence of cases from one seed and its own data from
(seed, case, rank). Run: tutti launch -n 3 -- python3 -m pytest test_vs_torch.py
Without torch the module is skipped, printing why (ctest shows it as skipped).
"""
import os

import pytest

try:
    import torch
    import torch.distributed as dist
except ImportError as error:
    print(f"test_vs_torch SKIPPED: torch is not importable ({error}); install python3-torch "
          f"(Debian) for /usr/bin/python3 to run the comparison with torch.distributed")
    pytest.skip("torch is not importable", allow_module_level=True)

import tutti
from ports import free_port

SEED = int(os.environ.get("TUTTI_VS_TORCH_SEED", "20240607"))
CASES = 12
INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OPS = ["sum", "prod", "min", "max", "avg"]
GLOO_OP = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
           "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.SUM}
SIZES = [1, 3, 64, 1000, 70001]


@pytest.fixture(scope="module", autouse=True)
def both():
    tutti.init(timeout=120)
    rank, size = tutti.rank(), tutti.world_size()
    # gloo needs a rendezvous of its own: rank 0 picks a free loopback port and tutti
    # tells the others.
    port = torch.zeros(1, dtype=torch.int64)
    if rank == 0:
        port[0] = free_port()
    tutti.broadcast(port, src=0)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{int(port)}", rank=rank,
                            world_size=size)
    yield
    dist.destroy_process_group()
    tutti.destroy()


def cases(kind):
    """The same (case, dtype, op, count, root) sequence on every rank."""
    chooser = torch.Generator().manual_seed(SEED + sum(map(ord, kind)))

    def pick(items):
        return items[int(torch.randint(len(items), (1,), generator=chooser))]

    for case in range(CASES):
        yield case, pick(INTS + FLOATS), pick(OPS), pick(SIZES), \
            int(torch.randint(tutti.world_size(), (1,), generator=chooser))


def data(kind, case, dtype, op, count):
    """This rank's input, in a range where no integer reduction overflows."""
    generator = torch.Generator().manual_seed(SEED * 31 + case * 1009 + tutti.rank()
                                             + sum(map(ord, kind)))
    if dtype.is_floating_point:
        return (torch.rand(count, generator=generator, dtype=torch.float64) * 4 - 2).to(dtype)
    low, high = {"prod": (-2, 3), "sum": (-20, 21), "avg": (-20, 21)}.get(op, (-100, 101))
    if dtype == torch.uint8:
        low, high = max(low, 0), min(high, 3 if op == "prod" else 60)
    return torch.randint(low, high, (count,), generator=generator, dtype=torch.int64).to(dtype)


def gloo_reduce(x, op, root=None):
    """gloo's all_reduce (or reduce to root) of x, with AVG and bfloat16 made from what
    gloo has."""
    work = x.to(torch.float32) if x.dtype == torch.bfloat16 else x.clone()
    if root is None:
        dist.all_reduce(work, op=GLOO_OP[op])
    else:
        dist.reduce(work, root, op=GLOO_OP[op])
    if op == "avg":
        if work.dtype.is_floating_point:
            work = work / tutti.world_size()
        else:
            work = torch.div(work, tutti.world_size(), rounding_mode="trunc")
    return work.to(x.dtype)


def gloo_moved(x):
    """x as gloo can move it: bfloat16 as its bytes."""
    return x.view(torch.uint8) if x.dtype == torch.bfloat16 else x


def same(ours, reference, what, reduced):
    if reduced and ours.dtype.is_floating_point:
        # gloo rounds after every step (float16 in float16), tutti once, and the two may
        # add in another order: up to n units in the last place of a sum of n values
        # below 2, that is n * eps * 2n, and n * eps relative for a product.
        n = tutti.world_size()
        tolerance = 2 * n * n * torch.finfo(ours.dtype).eps
        torch.testing.assert_close(ours.to(torch.float64), reference.to(torch.float64),
                                   rtol=tolerance, atol=tolerance, msg=what)
    else:
        assert torch.equal(ours, reference), f"{what}: tutti {ours[:8]} vs gloo {reference[:8]}"


def test_all_reduce():
    for case, dtype, op, count, _ in cases("all_reduce"):
        x = data("all_reduce", case, dtype, op, count)
        ours = x.clone()
        tutti.all_reduce(ours, op=op)
        same(ours, gloo_reduce(x, op), f"all_reduce {op} {dtype} x {count}", True)


def test_reduce():
    for case, dtype, op, count, root in cases("reduce"):
        x = data("reduce", case, dtype, op, count)
        ours = x.clone()
        tutti.reduce(ours, dst=root, op=op)
        reference = gloo_reduce(x, op, root)
        if tutti.rank() == root:
            same(ours, reference, f"reduce {op} {dtype} x {count} to {root}", True)
        else:
            assert torch.equal(ours, x), "reduce changed a rank other than dst"


def test_reduce_scatter():
    size, rank = tutti.world_size(), tutti.rank()
    for case, dtype, op, count, _ in cases("reduce_scatter"):
        x = data("reduce_scatter", case, dtype, op, count * size)
        ours = torch.zeros(count, dtype=dtype)
        if case % 2:
            tutti.reduce_scatter(ours, list(x.chunk(size)), op=op)
        else:
            tutti.reduce_scatter_tensor(ours, x, op=op)
        reference = gloo_reduce(x, op)[rank * count:(rank + 1) * count]
        same(ours, reference, f"reduce_scatter {op} {dtype} x {count}", True)


def test_broadcast():
    for case, dtype, op, count, root in cases("broadcast"):
        x = data("broadcast", case, dtype, op, count)
        ours, reference = x.clone(), x.clone()
        tutti.broadcast(ours, src=root)
        dist.broadcast(gloo_moved(reference), root)
        same(ours, reference, f"broadcast {dtype} x {count} from {root}", False)


def test_all_gather():
    size = tutti.world_size()
    for case, dtype, op, count, _ in cases("all_gather"):
        x = data("all_gather", case, dtype, op, count)
        references = [torch.zeros_like(x) for _ in range(size)]
        dist.all_gather([gloo_moved(r) for r in references], gloo_moved(x))
        ours = [torch.zeros_like(x) for _ in range(size)]
        tutti.all_gather(ours, x)
        whole = torch.zeros(count * size, dtype=dtype)
        tutti.all_gather_into_tensor(whole, x)
        for i in range(size):
            same(ours[i], references[i], f"all_gather {dtype} x {count} block {i}", False)
        same(whole, torch.cat(references), f"all_gather_into_tensor {dtype} x {count}", False)


def test_gather_and_scatter():
    size, rank = tutti.world_size(), tutti.rank()
    for case, dtype, op, count, root in cases("gather"):
        x = data("gather", case, dtype, op, count)
        references = [torch.zeros_like(x) for _ in range(size)] if rank == root else None
        dist.gather(gloo_moved(x), [gloo_moved(r) for r in references] if references else None, root)
        ours = [torch.zeros_like(x) for _ in range(size)] if rank == root else None
        tutti.gather(x, ours, dst=root)
        if rank == root:
            for i in range(size):
                same(ours[i], references[i], f"gather {dtype} x {count} to {root}", False)
        pieces = list(data("scatter", case, dtype, op, count * size).chunk(size))
        reference, mine = torch.zeros_like(x), torch.zeros_like(x)
        dist.scatter(gloo_moved(reference), [gloo_moved(p.clone()) for p in pieces]
                     if rank == root else None, root)
        tutti.scatter(mine, pieces if rank == root else None, src=root)
        same(mine, reference, f"scatter {dtype} x {count} from {root}", False)


def test_all_to_all():
    size = tutti.world_size()
    for case, dtype, op, count, _ in cases("all_to_all"):
        x = data("all_to_all", case, dtype, op, count * size)
        reference = torch.zeros_like(x)
        dist.all_to_all_single(gloo_moved(reference), gloo_moved(x))
        ours = torch.zeros_like(x)
        tutti.all_to_all_single(ours, x)
        same(ours, reference, f"all_to_all_single {dtype} x {count}", False)
        outputs = [torch.zeros(count, dtype=dtype) for _ in range(size)]
        tutti.all_to_all(outputs, list(x.chunk(size)))
        same(torch.cat(outputs), reference, f"all_to_all {dtype} x {count}", False)


def test_send_recv_ring():
    size, rank = tutti.world_size(), tutti.rank()
    for case, dtype, op, count, _ in cases("send_recv"):
        x = data("send_recv", case, dtype, op, count)
        right, left = (rank + 1) % size, (rank - 1) % size
        reference, ours = torch.zeros_like(x), torch.zeros_like(x)
        requests = [dist.isend(gloo_moved(x), right), dist.irecv(gloo_moved(reference), left)]
        for request in requests:
            request.wait()
        receiving = tutti.irecv(ours, src=left)
        tutti.isend(x, dst=right).wait(60)
        receiving.wait(60)
        same(ours, reference, f"send/recv {dtype} x {count}", False)
        tutti.barrier()
        dist.barrier()
