"""The Python binding on several ranks: every collective and point-to-point call with
its expected values, Works whose buffers the caller dropped, groups, and the errors
ranks get from each other (a timeout naming the missing rank, a mismatch naming the
rank that differs), and abort from another thread waking a waiter.

Every rank runs the same tests in the same order, so that their collectives meet:
  tutti launch -n 4 -- python3 -m pytest test_multirank.py
"""
import gc
import re
import threading

import numpy
import pytest
import torch

import tutti


@pytest.fixture(scope="module", autouse=True)
def world():
    comm = tutti.init(timeout=60)
    yield comm
    tutti.destroy()


def me():
    return tutti.rank(), tutti.world_size()


def split_of_all(timeout=None):
    """A Comm of every rank, for a test that may leave it broken, with `timeout` (seconds)
    as its operation timeout; skips the test on one rank."""
    rank, size = me()
    if size < 2:
        pytest.skip("needs 2 ranks")
    group = tutti.split(0)
    if timeout is not None:
        group.set_timeout(timeout)
    return rank, size, group


def test_all_reduce_every_op():
    rank, size = me()
    for op, expect in [("sum", sum(range(1, size + 1))), ("prod", numpy.prod(range(1, size + 1))),
                       ("min", 1), ("max", size), ("avg", (size + 1) / 2)]:
        x = torch.full((5, 3), float(rank + 1), dtype=torch.float64)
        tutti.all_reduce(x, op=op)
        assert torch.all(x == expect), (op, x)
    ints = numpy.full(7, rank + 1, dtype=numpy.int64)
    tutti.all_reduce(ints, op="avg")  # integer average truncates, as in C
    assert (ints == sum(range(1, size + 1)) // size).all()


def test_reduce_and_broadcast():
    rank, size = me()
    for dst in range(size):
        x = numpy.full(3, rank, dtype=numpy.int32)
        tutti.reduce(x, dst=dst, op="sum")
        assert (x == (size * (size - 1) // 2 if rank == dst else rank)).all()
        y = torch.full((4,), float(rank))
        tutti.broadcast(y, src=dst)
        assert torch.all(y == dst)


def test_gathers_and_scatters():
    rank, size = me()
    t = torch.arange(3, dtype=torch.int64) + 10 * rank
    lists = [torch.zeros(3, dtype=torch.int64) for _ in range(size)]
    tutti.all_gather(lists, t)
    assert [x.tolist() for x in lists] == [[10 * r, 10 * r + 1, 10 * r + 2] for r in range(size)]
    whole = torch.zeros(3 * size, dtype=torch.int64)
    tutti.all_gather_into_tensor(whole, t)
    assert torch.equal(whole, torch.cat(lists))

    inputs = [torch.full((2,), float(rank * size + i)) for i in range(size)]
    out = torch.zeros(2)
    tutti.reduce_scatter(out, inputs, op="max")
    assert torch.all(out == (size - 1) * size + rank)
    tutti.reduce_scatter_tensor(out, torch.cat(inputs), op="min")
    assert torch.all(out == rank)

    dst = size - 1
    gathered = [numpy.zeros(3, dtype=numpy.int64) for _ in range(size)] if rank == dst else None
    tutti.gather(t.numpy(), gathered, dst=dst)
    if rank == dst:
        assert [g.tolist() for g in gathered] == [x.tolist() for x in lists]
    pieces = [numpy.full(2, 100.0 + r) for r in range(size)] if rank == 0 else None
    got = numpy.zeros(2)
    tutti.scatter(got, pieces, src=0)
    assert (got == 100.0 + rank).all()


def test_shared_memory_is_read_in_place():
    rank, size = me()
    world = tutti.world()
    n = 1 << 16  # float32: 256 KiB a rank, which the collectives read in place
    view = world.mem_alloc(4 * n * (size + 1))
    both = numpy.frombuffer(view, dtype=numpy.float32)
    mine, gathered = both[:n], both[n:]
    mine[:] = numpy.arange(n) + rank
    tutti.all_gather_into_tensor(gathered, mine)
    for r in range(size):
        assert (gathered[r * n:(r + 1) * n] == numpy.arange(n) + r).all(), r
    mine[:] = rank
    tutti.broadcast(mine, src=size - 1)
    assert (mine == size - 1).all()
    mine[:] = numpy.arange(n) * (rank + 1)
    tutti.all_reduce(mine)
    assert (mine == numpy.arange(n) * (size * (size + 1) // 2)).all()
    del both, mine, gathered
    world.mem_free(view)
    with pytest.raises(tutti.TuttiInvalidArgument, match="or was freed already"):
        world.mem_free(view)
    with pytest.raises(tutti.TuttiInvalidArgument, match="nbytes is 0"):
        world.mem_alloc(0)


def test_all_to_all():
    rank, size = me()
    inputs = [torch.tensor([rank * 100 + j], dtype=torch.int32) for j in range(size)]
    outputs = [torch.zeros(1, dtype=torch.int32) for _ in range(size)]
    tutti.all_to_all(outputs, inputs)
    assert [o.item() for o in outputs] == [i * 100 + rank for i in range(size)]
    single = torch.zeros(size, dtype=torch.int32)
    tutti.all_to_all_single(single, torch.cat(inputs))
    assert single.tolist() == [i * 100 + rank for i in range(size)]


def test_all_to_all_of_different_sizes():
    """Rank r sends rank j r + j rows (none from 0 to 0), each row [r, j, k]: the
    rows arrive in rank order, from a numpy array and torch tensors alike, blocking
    and asynchronous."""
    rank, size = me()
    sends = [rank + j for j in range(size)]
    receives = [i + rank for i in range(size)]
    rows = [[rank, j, k] for j in range(size) for k in range(rank + j)]
    expected = [[i, rank, k] for i in range(size) for k in range(i + rank)]
    x = numpy.array(rows, dtype=numpy.int64).reshape(-1, 3)
    out = numpy.zeros((sum(receives), 3), dtype=numpy.int64)
    tutti.all_to_all_single(out, x, receives, sends)
    assert out.tolist() == expected
    out = torch.zeros(sum(receives), 3, dtype=torch.int64)
    tutti.all_to_all_single(out, torch.tensor(x), receives, sends, async_op=True).wait(30)
    assert out.tolist() == expected
    outputs = [torch.zeros(n, 3, dtype=torch.int64) for n in receives]
    tutti.all_to_all(outputs, list(torch.tensor(x).split(sends)))
    assert torch.cat(outputs).tolist() == expected


def test_send_recv_ring():
    rank, size = me()
    if size < 2:
        pytest.skip("needs 2 ranks")
    right, left = (rank + 1) % size, (rank - 1) % size
    out = numpy.full(5, rank, dtype=numpy.float32)
    got = numpy.zeros(5, dtype=numpy.float32)
    # Both posted before either is waited on: no deadlock, as in the tutorial.
    receiving = tutti.irecv(got, src=left, tag=7)
    sending = tutti.isend(out, dst=right, tag=7)
    assert sending.wait(30) and receiving.wait(30)
    assert (got == left).all()
    if rank % 2 == 0 and rank + 1 < size:
        tutti.send(torch.tensor([1.5, 2.5]), dst=rank + 1)
    elif rank % 2 == 1:
        back = torch.zeros(2)
        assert tutti.recv(back, src=rank - 1) == rank - 1
        assert back.tolist() == [1.5, 2.5]


def test_async_work_keeps_dropped_buffers_alive():
    rank, size = me()
    works = []
    for i in range(20):
        # The caller keeps neither the lists nor the tensors: the Works must.
        works.append((i, tutti.all_gather([torch.zeros(1000) for _ in range(size)],
                                          torch.full((1000,), float(rank + i)), async_op=True)))
        works.append((None, tutti.all_reduce(torch.ones(1000), async_op=True)))
    gc.collect()
    for _, work in works:
        assert work.wait(30)
    kept = [torch.zeros(1000) for _ in range(size)]
    work = tutti.all_gather(kept, torch.full((1000,), float(rank)), async_op=True)
    del work  # dropped while it may be running: its Comm finishes it
    gc.collect()
    tutti.barrier()  # returns after the all_gather, which finished first: kept is filled
    assert all(torch.all(kept[r] == r) for r in range(size)), [t[:2] for t in kept]
    x = torch.ones(4)
    tutti.all_reduce(x)
    assert torch.all(x == size)


def test_dropped_work_that_fails_warns():
    rank, size, group = split_of_all(0.3)
    if rank == 0:
        work = group.irecv(torch.zeros(1), src=1)  # rank 1 never sends
        del work
        gc.collect()
        with pytest.warns(RuntimeWarning, match=r"irecv, whose Work was dropped.*failed"):
            group.destroy()  # fails the receive, if its timeout has not yet
    else:
        group.destroy()
    tutti.barrier()


def test_is_completed_and_wait_timeout():
    rank, size, group = split_of_all()
    x = torch.zeros(1)
    if rank == 0:
        work = group.irecv(x, src=1)
        assert not work.is_completed()
        with pytest.raises(tutti.TuttiTimeout):
            work.wait(timeout=0.2)
        assert not work.is_completed()
        tutti.barrier()  # now rank 1 sends
        assert work.wait(30) and work.is_completed() and x.item() == 42.0
    else:
        tutti.barrier()
        if rank == 1:
            group.send(torch.tensor([42.0]), dst=0)
    group.destroy()


def test_new_group_and_split():
    rank, size = me()
    evens = tutti.new_group([r for r in range(size) if r % 2 == 0])
    if rank % 2 == 0:
        assert evens.rank() == rank // 2 and evens.size() == (size + 1) // 2
        x = torch.tensor([float(rank)])
        tutti.all_reduce(x, group=evens)
        assert x.item() == sum(range(0, size, 2))
        evens.destroy()
    else:
        assert evens is None
    reverse = tutti.new_group(list(reversed(range(size))))
    assert reverse.rank() == size - 1 - rank
    reverse.destroy()
    halves = tutti.split(rank % 2, key=-rank)
    assert halves.rank() == len([r for r in range(rank + 1, size) if r % 2 == rank % 2])
    halves.barrier()
    halves.destroy()


def test_skipped_collective_times_out_naming_the_rank():
    rank, size, group = split_of_all(1.0)
    if rank != size - 1:
        with pytest.raises(tutti.TuttiTimeout) as caught:
            group.all_reduce(torch.ones(3))
        assert str(size - 1) in caught.value.message
        assert caught.value.status == tutti._capi.ERR_TIMEOUT
    tutti.barrier()
    group.destroy()


def test_mismatch_names_the_other_rank():
    rank, size, group = split_of_all(10)
    with pytest.raises(tutti.TuttiMismatch) as caught:
        group.all_reduce(torch.ones(4 + (rank == 0)))
    other = 1 if rank == 0 else 0
    message = caught.value.message
    # The rank that meets the odd call names its caller; one that was waiting for a rank
    # which had found the mismatch and left names that rank instead (the shared-memory
    # path's two messages), whichever comes first.
    named = f"rank {other} called a different collective" in message
    relayed = re.search(r"rank \d+ found that the ranks called different collectives", message) is not None
    assert named or relayed, message
    tutti.barrier()
    group.destroy()


def test_abort_from_another_thread_wakes_the_waiter():
    rank, size, group = split_of_all()
    if rank == 0:
        pending = group.irecv(torch.zeros(1), src=1)  # rank 1 never sends
        aborter = threading.Timer(0.3, group.abort)
        aborter.start()
        with pytest.raises(tutti.TuttiAborted):
            pending.wait(30)
        aborter.join()
        with pytest.raises(tutti.TuttiAborted):
            group.barrier()
    tutti.barrier()
    group.destroy()
