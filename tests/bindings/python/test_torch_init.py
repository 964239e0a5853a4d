"""backend="tutti" through each init method torch has, and tutti's own store beside
torch's: under tutti launch (which exports RANK ... MASTER_PORT) and with only
MASTER_ADDR/MASTER_PORT (as torch.distributed.launch or a Slurm script sets them),
tutti.init() and init_process_group() work in either order: MASTER_PORT is torch's,
tutti's store takes MASTER_PORT + 1.

Run: tutti launch -n 2 -- python3 -m pytest test_torch_init.py
"""
import datetime
import os
import shutil
import tempfile
import time

import pytest
import torch
import torch.distributed as dist

import tutti
import tutti.torch
from ports import free_port

RANK = int(os.environ["RANK"])
SIZE = int(os.environ["WORLD_SIZE"])
# One folder per job, every rank on this machine: where rank 0 leaves what the others read.
JOB_DIR = os.path.join(tempfile.gettempdir(), f"tutti-torch-test-{os.environ['TUTTI_LAUNCHER_PID']}")


@pytest.fixture(scope="module", autouse=True)
def job_dir():
    yield
    if RANK == 0:  # every rank read what it needed before the last test's collectives
        shutil.rmtree(JOB_DIR, ignore_errors=True)


def shared_free_port(name, pair=False):
    """A free loopback port (with pair, one whose next port is free too), chosen by rank
    0 and read by the others from JOB_DIR."""
    path = os.path.join(JOB_DIR, name)
    if RANK == 0:
        os.makedirs(JOB_DIR, exist_ok=True)
        # With pair, MASTER_PORT for torch's store and the next for tutti's.
        port = free_port(2 if pair else 1)
        with open(path + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(path + ".tmp", path)
        return port
    for _ in range(600):
        if os.path.exists(path):
            with open(path) as f:
                return int(f.read())
        time.sleep(0.05)
    raise TimeoutError(f"rank 0 never wrote {path}")


def check_group(expected_backend):
    assert dist.get_backend() == expected_backend
    x = torch.ones(3) * (RANK + 1)
    dist.all_reduce(x)
    assert torch.equal(x, torch.ones(3) * SIZE * (SIZE + 1) / 2)
    dist.barrier()


def test_env():
    dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=60))
    group = dist.distributed_c10d._get_default_group()
    assert group.comm.rank() == RANK and group.comm.size() == SIZE
    check_group("tutti")
    dist.destroy_process_group()


def test_tcp():
    port = shared_free_port("tcp")
    dist.init_process_group("tutti", init_method=f"tcp://127.0.0.1:{port}", rank=RANK,
                            world_size=SIZE)
    check_group("tutti")
    dist.destroy_process_group()


def test_file():
    path = os.path.join(JOB_DIR, "filestore")
    shared_free_port("file-ready")  # JOB_DIR exists on every rank from here
    dist.init_process_group("tutti", init_method=f"file://{path}", rank=RANK, world_size=SIZE)
    check_group("tutti")
    dist.destroy_process_group()


def test_store():
    port = shared_free_port("store")
    store = dist.TCPStore("127.0.0.1", port, SIZE, RANK == 0, timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("tutti", store=store, rank=RANK, world_size=SIZE)
    check_group("tutti")
    dist.destroy_process_group()


def test_the_timeout_becomes_tuttis():
    port = shared_free_port("timeout")
    # torch's own store gets a minute to connect: through init_method=tcp:// it would
    # get the group's 1 s, and on a loaded machine rank 1 could give up before rank 0's
    # store listened (it did so in CI). The group's timeout is the 1 s under test.
    store = dist.TCPStore("127.0.0.1", port, SIZE, RANK == 0, timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("tutti", store=store, rank=RANK, world_size=SIZE,
                            timeout=datetime.timedelta(seconds=1))
    timed_out = os.path.join(JOB_DIR, "timed-out")
    if RANK == 0:
        with pytest.raises(TimeoutError, match="rank 1"):
            dist.all_reduce(torch.ones(1))  # the others never join it
        open(timed_out, "w").close()
    else:
        # Still there when rank 0 times out: a timeout, not a lost rank.
        for _ in range(1200):
            if os.path.exists(timed_out):
                break
            time.sleep(0.05)
    dist.destroy_process_group()


def without_tutti_launch_store(master_port):
    """The environment torch.distributed.launch or a Slurm script gives: MASTER_ADDR and
    MASTER_PORT, no TUTTI_ADDR."""
    for name in ("TUTTI_ADDR", "TUTTI_STORE_SERVER"):
        os.environ.pop(name, None)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(master_port)


@pytest.mark.parametrize("tutti_first", [True, False])
def test_tutti_and_torch_stores_never_share_a_port(tutti_first):
    saved = dict(os.environ)
    # MASTER_PORT and MASTER_PORT + 1 must both be free: probe a pair.
    port = shared_free_port(f"pair-{tutti_first}", pair=True)
    try:
        without_tutti_launch_store(port)
        if tutti_first:
            tutti.init(timeout=60)
            dist.init_process_group("gloo")
        else:
            dist.init_process_group("gloo")
            tutti.init(timeout=60)
        check_group("gloo")
        x = torch.ones(2)
        tutti.all_reduce(x)
        assert torch.equal(x, torch.full((2,), float(SIZE)))
        dist.destroy_process_group()
        tutti.destroy()
    finally:
        os.environ.clear()
        os.environ.update(saved)
