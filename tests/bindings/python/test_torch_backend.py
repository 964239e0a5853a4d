"""backend="tutti" through torch.distributed, against gloo on the same ranks.

The default group is tutti's (init_process_group("tutti"), env:// from tutti launch);
a gloo group of the same ranks (new_group(backend="gloo")) is the reference. Every
collective torch.distributed has runs through both on the same random data: results
must be equal exactly for integers and moved data, and within the dtype's rounding
for reduced floats (the two may add in different orders). Where gloo lacks a call
(reduce_scatter, AVG), the reference is made from what it has, and says so. Then:
Works (wait(timeout), is_completed, get_future, none kept alive beyond the bound),
input refused before anything is sent (the group stays usable), new_group, and DDP
(plain, find_unused_parameters, no_sync, a comm hook) against DDP on gloo.

Run: tutti launch -n 3 -- python3 -m pytest test_torch_backend.py
"""
import datetime
import gc

import pytest
import torch
import torch.distributed as dist

import tutti
import tutti.torch

SEED = 20251125
CASES = 6
DTYPES = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32,
          torch.float64]
OPS = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
       "max": dist.ReduceOp.MAX}
SIZES = [1, 3, 64, 1000, 70001]

gloo = None


@pytest.fixture(scope="module", autouse=True)
def groups():
    global gloo
    dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=120))
    assert dist.get_backend() == "tutti"
    gloo = dist.new_group(backend="gloo")
    yield
    dist.destroy_process_group()


def rank():
    return dist.get_rank()


def size():
    return dist.get_world_size()


def cases(kind):
    chooser = torch.Generator().manual_seed(SEED + sum(map(ord, kind)))

    def pick(items):
        return items[int(torch.randint(len(items), (1,), generator=chooser))]

    for case in range(CASES):
        yield case, pick(DTYPES), pick(list(OPS)), pick(SIZES), \
            int(torch.randint(size(), (1,), generator=chooser))


def data(kind, case, dtype, op, count):
    generator = torch.Generator().manual_seed(SEED * 31 + case * 1009 + rank() + sum(map(ord, kind)))
    if dtype.is_floating_point:
        return (torch.rand(count, generator=generator, dtype=torch.float64) * 4 - 2).to(dtype)
    low, high = {"prod": (-2, 3), "sum": (-20, 21)}.get(op, (-100, 101))
    if dtype == torch.uint8:
        low, high = max(low, 0), min(high, 3 if op == "prod" else 60)
    return torch.randint(low, high, (count,), generator=generator, dtype=torch.int64).to(dtype)


def same(ours, reference, what, reduced):
    if reduced and ours.dtype.is_floating_point:
        n = size()
        tolerance = 2 * n * n * torch.finfo(ours.dtype).eps
        torch.testing.assert_close(ours.to(torch.float64), reference.to(torch.float64),
                                   rtol=tolerance, atol=tolerance, msg=what)
    else:
        assert torch.equal(ours, reference), f"{what}: tutti {ours[:8]} vs gloo {reference[:8]}"


# -- every collective against gloo --------------------------------------------------------

def test_all_reduce_and_reduce():
    for case, dtype, op, count, root in cases("all_reduce"):
        x = data("all_reduce", case, dtype, op, count)
        ours, reference = x.clone(), x.clone()
        dist.all_reduce(ours, op=OPS[op])
        dist.all_reduce(reference, op=OPS[op], group=gloo)
        same(ours, reference, f"all_reduce {op} {dtype} x {count}", True)
        ours, reference = x.clone(), x.clone()
        dist.reduce(ours, root, op=OPS[op])
        dist.reduce(reference, root, op=OPS[op], group=gloo)
        if rank() == root:
            same(ours, reference, f"reduce {op} {dtype} x {count} to {root}", True)
        else:
            assert torch.equal(ours, x), "reduce changed a rank other than dst"


def test_avg_is_sum_over_size():
    x = data("avg", 0, torch.float64, "sum", 100)
    ours, reference = x.clone(), x.clone()
    dist.all_reduce(ours, op=dist.ReduceOp.AVG)
    dist.all_reduce(reference, group=gloo)  # gloo has no AVG
    same(ours, reference / size(), "all_reduce AVG", True)


def test_all_reduce_coalesced():
    tensors = [data("coalesced", i, torch.float32, "sum", n) for i, n in enumerate((3, 1, 70))]
    references = [t.clone() for t in tensors]
    dist.all_reduce_coalesced(tensors)
    dist.all_reduce_coalesced(references, group=gloo)
    for ours, reference in zip(tensors, references):
        same(ours, reference, "all_reduce_coalesced", True)


def test_broadcast():
    for case, dtype, op, count, root in cases("broadcast"):
        x = data("broadcast", case, dtype, op, count)
        ours, reference = x.clone(), x.clone()
        dist.broadcast(ours, root)
        dist.broadcast(reference, root, group=gloo)
        same(ours, reference, f"broadcast {dtype} x {count} from {root}", False)


def test_all_gather():
    for case, dtype, op, count, _ in cases("all_gather"):
        x = data("all_gather", case, dtype, op, count)
        references = [torch.zeros_like(x) for _ in range(size())]
        dist.all_gather(references, x, group=gloo)
        ours = [torch.zeros_like(x) for _ in range(size())]
        dist.all_gather(ours, x)
        whole = torch.zeros(count * size(), dtype=dtype)
        dist.all_gather_into_tensor(whole, x)
        legacy = torch.zeros(count * size(), dtype=dtype)
        dist._all_gather_base(legacy, x)
        for i in range(size()):
            same(ours[i], references[i], f"all_gather {dtype} x {count} block {i}", False)
        same(whole, torch.cat(references), f"all_gather_into_tensor {dtype} x {count}", False)
        same(legacy, torch.cat(references), f"_all_gather_base {dtype} x {count}", False)


def test_all_gather_coalesced():
    inputs = [data("gather_coalesced", i, torch.int64, "sum", n) for i, n in enumerate((2, 5))]
    ours = [[torch.zeros_like(x) for x in inputs] for _ in range(size())]
    references = [[torch.zeros_like(x) for x in inputs] for _ in range(size())]
    dist.all_gather_coalesced(ours, inputs)
    dist.all_gather_coalesced(references, inputs, group=gloo)
    for mine, theirs in zip(ours, references):
        for a, b in zip(mine, theirs):
            same(a, b, "all_gather_coalesced", False)


def test_reduce_scatter():
    for case, dtype, op, count, _ in cases("reduce_scatter"):
        x = data("reduce_scatter", case, dtype, op, count * size())
        # gloo has no reduce_scatter: its all_reduce, and this rank's block of it.
        reference = x.clone()
        dist.all_reduce(reference, op=OPS[op], group=gloo)
        reference = reference[rank() * count:(rank() + 1) * count]
        ours = torch.zeros(count, dtype=dtype)
        dist.reduce_scatter(ours, list(x.chunk(size())), op=OPS[op])
        same(ours, reference, f"reduce_scatter {op} {dtype} x {count}", True)
        ours = torch.zeros(count, dtype=dtype)
        dist.reduce_scatter_tensor(ours, x, op=OPS[op])
        same(ours, reference, f"reduce_scatter_tensor {op} {dtype} x {count}", True)
        ours = torch.zeros(count, dtype=dtype)
        dist._reduce_scatter_base(ours, x, op=OPS[op])
        same(ours, reference, f"_reduce_scatter_base {op} {dtype} x {count}", True)


def test_gather_and_scatter():
    for case, dtype, op, count, root in cases("gather"):
        x = data("gather", case, dtype, op, count)
        here = rank() == root
        references = [torch.zeros_like(x) for _ in range(size())] if here else None
        dist.gather(x, references, root, group=gloo)
        ours = [torch.zeros_like(x) for _ in range(size())] if here else None
        dist.gather(x, ours, root)
        if here:
            for i in range(size()):
                same(ours[i], references[i], f"gather {dtype} x {count} to {root}", False)
        pieces = list(data("scatter", case, dtype, op, count * size()).chunk(size()))
        reference, mine = torch.zeros_like(x), torch.zeros_like(x)
        dist.scatter(reference, [p.clone() for p in pieces] if here else None, root, group=gloo)
        dist.scatter(mine, pieces if here else None, root)
        same(mine, reference, f"scatter {dtype} x {count} from {root}", False)


def test_all_to_all():
    for case, dtype, op, count, _ in cases("all_to_all"):
        x = data("all_to_all", case, dtype, op, count * size())
        reference = torch.zeros_like(x)
        dist.all_to_all_single(reference, x, group=gloo)
        ours = torch.zeros_like(x)
        dist.all_to_all_single(ours, x)
        same(ours, reference, f"all_to_all_single {dtype} x {count}", False)
        listed = [torch.zeros(count, dtype=dtype) for _ in range(size())]
        dist.all_to_all(listed, [c.clone() for c in x.chunk(size())])
        same(torch.cat(listed), reference, f"all_to_all {dtype} x {count}", False)


def test_all_to_all_with_splits():
    """Blocks of different sizes (tutti_all_to_allv): rows of 3 elements, rank r sending
    rank j a number of rows that differs by sender and receiver, some none; the list
    form with tensors of those sizes, and an asynchronous call."""
    def rows(sender, receiver, case):
        return (sender * 2 + receiver * 3 + case + sender * receiver) % 4 * (case + 1)

    for case, dtype, op, _, _ in cases("all_to_allv"):
        sends = [rows(rank(), j, case) for j in range(size())]
        receives = [rows(i, rank(), case) for i in range(size())]
        x = data("all_to_allv", case, dtype, op, sum(sends) * 3).reshape(-1, 3)
        reference = torch.zeros(sum(receives), 3, dtype=dtype)
        dist.all_to_all_single(reference, x, receives, sends, group=gloo)
        ours = torch.zeros_like(reference)
        dist.all_to_all_single(ours, x, receives, sends)
        same(ours, reference, f"all_to_all_single {dtype} splits {sends} / {receives}", False)
        listed = [torch.zeros(n, 3, dtype=dtype) for n in receives]
        dist.all_to_all(listed, [block.clone() for block in x.split(sends)])
        same(torch.cat(listed), reference, f"all_to_all {dtype} sizes {sends} / {receives}", False)
        ours = torch.zeros_like(reference)
        dist.all_to_all_single(ours, x, receives, sends, async_op=True).wait()
        same(ours, reference, f"all_to_all_single async {dtype} splits {sends}", False)
    # One side's splits given, the other's equal: torch's rule for a None split.
    x = torch.arange(size() * 2, dtype=torch.int64) + 100 * rank()
    reference, ours = torch.zeros_like(x), torch.zeros_like(x)
    dist.all_to_all_single(reference, x, None, [2] * size(), group=gloo)
    dist.all_to_all_single(ours, x, None, [2] * size())
    same(ours, reference, "all_to_all_single one side split", False)


def test_point_to_point_and_objects():
    right, left = (rank() + 1) % size(), (rank() - 1) % size()
    x = torch.arange(5, dtype=torch.int32) + 10 * rank()
    got = torch.zeros(5, dtype=torch.int32)
    sending = dist.isend(x, right)
    receiving = dist.irecv(got, left)
    sending.wait()
    receiving.wait()
    assert torch.equal(got, torch.arange(5, dtype=torch.int32) + 10 * left)
    if rank() == 0:
        dist.send(x + 1, 1)
    elif rank() == 1:
        y = torch.zeros(5, dtype=torch.int32)
        assert dist.recv(y, 0) == 0
        assert torch.equal(y, torch.arange(5, dtype=torch.int32) + 1)
    ops = [dist.P2POp(dist.isend, x, right), dist.P2POp(dist.irecv, got, left)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert torch.equal(got, torch.arange(5, dtype=torch.int32) + 10 * left)
    objects = [None] * size()
    dist.all_gather_object(objects, {"rank": rank(), "name": "x" * rank()})
    assert objects == [{"rank": r, "name": "x" * r} for r in range(size())]
    shared = [{"from": 0}] if rank() == 0 else [None]
    dist.broadcast_object_list(shared, 0)
    assert shared == [{"from": 0}]
    dist.barrier()


def test_new_group():
    members = list(range(0, size(), 2))  # the even ranks
    group = dist.new_group(members)
    backwards = dist.new_group(list(reversed(range(size()))))
    x = torch.ones(3) * (rank() + 1)
    if rank() in members:
        dist.all_reduce(x, group=group)
        assert torch.equal(x, torch.ones(3) * sum(r + 1 for r in members))
        assert dist.get_backend(group) == "tutti"
    else:
        assert group == dist.GroupMember.NON_GROUP_MEMBER
    y = torch.zeros(1)
    if rank() == size() - 1:
        y += 7
    dist.broadcast(y, size() - 1, group=backwards)  # global rank; group rank 0
    assert float(y) == 7


# -- Works ----------------------------------------------------------------------------------

def test_work_wait_is_completed_and_future():
    x = torch.ones(1000)
    work = dist.all_reduce(x, async_op=True)
    assert work.wait(timeout=datetime.timedelta(seconds=60)) is True
    assert work.is_completed() and work.is_success()
    assert torch.equal(x, torch.full((1000,), float(size())))
    future = dist.all_reduce(x, async_op=True).get_future()
    value = future.wait()
    assert isinstance(value, list) and value[0] is x
    assert torch.equal(x, torch.full((1000,), float(size() ** 2)))
    chained = dist.all_reduce(torch.ones(2), async_op=True).get_future().then(
        lambda f: f.value()[0] * 2)
    assert torch.equal(chained.wait(), torch.full((2,), 2.0 * size()))


def test_work_wait_timeout_leaves_it_running():
    # Rank 0's barrier cannot finish before the others join it, which they do only once
    # rank 0 says so, over the gloo group, after its wait ran out.
    go = torch.zeros(1)
    if rank() == 0:
        work = dist.barrier(async_op=True)
        with pytest.raises(TimeoutError, match="goes on"):
            work.wait(timeout=datetime.timedelta(milliseconds=50))
        assert not work.is_completed()
        for other in range(1, size()):
            dist.send(go, other, group=gloo)
        work.wait()
        assert work.is_completed()
    else:
        dist.recv(go, 0, group=gloo)
        dist.barrier()


def test_works_are_not_kept_alive():
    gc.collect()
    before = sum(isinstance(o, tutti.torch.Work) for o in gc.get_objects())
    x = torch.ones(8)
    works = [dist.all_reduce(x, async_op=True) for _ in range(500)]
    for work in works:
        work.wait()
    del works, work
    for _ in range(500):  # dropped unwaited: kept, bounded, until old
        dist.all_reduce(x, async_op=True)
    dist.barrier()
    gc.collect()
    kept = tutti.torch.live_works()
    alive = sum(isinstance(o, tutti.torch.Work) for o in gc.get_objects())
    assert kept <= tutti.torch.KEEP_FINISHED + 2, kept
    assert alive - before <= tutti.torch.KEEP_FINISHED + 2, (before, alive)


# -- input refused before anything is sent -----------------------------------------------

def test_bad_input_is_refused_and_the_group_stays_usable():
    cases = [
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND),
         tutti.TuttiUnsupported, "ReduceOp.BAND is not supported by backend tutti"),
        (lambda: dist.all_reduce(torch.ones(4, 4).t()), tutti.TuttiInvalidArgument,
         "is not contiguous"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool)), tutti.TuttiInvalidArgument,
         "dtype torch.bool"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)), tutti.TuttiInvalidArgument,
         "dtype torch.int16"),
        (lambda: dist.broadcast(torch.eye(3).to_sparse(), 0), tutti.TuttiUnsupported,
         "sparse_coo tensor"),
        (lambda: dist.all_to_all_single(torch.zeros(size() + 1), torch.zeros(size() + 1),
                                        [2] * size(), [2] * size()),
         tutti.TuttiInvalidArgument, "add up to"),
        (lambda: dist.all_to_all([torch.zeros(2) for _ in range(size())],
                                 [torch.zeros(3) for _ in range(size())]),
         tutti.TuttiInvalidArgument, "what this rank sends itself"),
        (lambda: dist.recv(torch.zeros(1)), tutti.TuttiUnsupported, "any source"),
    ]
    for call, kind, words in cases:
        with pytest.raises(kind, match=words.replace(".", r"\.")):
            call()
    x = torch.ones(4)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((4,), float(size())))


def test_cuda_tensors():
    if not torch.cuda.is_available():
        print("test_torch_backend.test_cuda_tensors SKIPPED (no CUDA device)")
        pytest.skip("no CUDA device")
    x = torch.ones(4, device="cuda")
    dist.all_reduce(x)
    assert torch.equal(x.cpu(), torch.full((4,), float(size())))
    with pytest.raises(tutti.TuttiInvalidArgument, match="same device"):
        dist.all_gather([torch.zeros(4) for _ in range(size())], x)


# -- DDP, against DDP on gloo ----------------------------------------------------------

class Net(torch.nn.Module):
    def __init__(self, unused):
        super().__init__()
        self.a = torch.nn.Linear(10, 16)
        self.b = torch.nn.Linear(16, 4)
        self.unused = torch.nn.Linear(4, 4) if unused else None  # for find_unused_parameters

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def train(group, find_unused, hook, accumulate):
    torch.manual_seed(0)
    model = Net(find_unused)
    with torch.no_grad():  # different on every rank: DDP's broadcast must fix that
        for p in model.parameters():
            p.add_(rank())
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, process_group=group, find_unused_parameters=find_unused, bucket_cap_mb=0.001)
    if hook:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        ddp.register_comm_hook(group, default_hooks.allreduce_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(rank())
    losses = []
    for step in range(6):
        x, y = torch.randn(8, 10, generator=generator), torch.randn(8, 4, generator=generator)
        if accumulate and step % 2 == 0:
            with ddp.no_sync():
                torch.nn.functional.mse_loss(ddp(x), y).backward()
            continue
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("find_unused,hook,accumulate", [
    (False, False, False), (True, False, False), (False, False, True), (False, True, False)])
def test_ddp_matches_gloo(find_unused, hook, accumulate):
    ours = train(None, find_unused, hook, accumulate)
    theirs = train(gloo, find_unused, hook, accumulate)
    assert len(ours[0]) == len(theirs[0])
    torch.testing.assert_close(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    for a, b in zip(ours[1], theirs[1]):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    # Every rank ends with the same weights.
    for p in ours[1]:
        first = p.clone()
        dist.broadcast(first, 0)
        assert torch.equal(first, p)
