"""A rank lost during DDP training on backend "tutti": the survivors' next step
raises an exception that is a RuntimeError (what torch code catches) and a
TuttiPeerLost, whose message names the lost rank.

The lost rank ends with os._exit(0): nothing destroyed, no atexit, its connections
closed by the kernel, which is what tutti sees of a SIGKILL too; exiting 0 lets the
launcher's status say whether the survivors passed. Run with the launcher told to keep
going after a rank ends:
  tutti launch -n 3 --keep-going -- python3 -m pytest test_torch_peer_lost.py
"""
import datetime
import os

import pytest
import torch
import torch.distributed as dist

import tutti
import tutti.torch


def test_survivors_of_a_killed_rank_name_it():
    dist.init_process_group("tutti", timeout=datetime.timedelta(seconds=60))
    rank, size = dist.get_rank(), dist.get_world_size()
    lost = size - 1
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with pytest.raises(RuntimeError) as caught:
        for step in range(1000):
            if step == 3 and rank == lost:
                os._exit(0)  # as if killed: nothing cleaned up
            loss = model(torch.randn(8, 16)).pow(2).mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    assert rank != lost
    message = str(caught.value)
    assert f"rank {lost}" in message and "lost" in message, message
    # Through the DDP reducer's future or directly: a tutti exception either way, or
    # torch's wrapping of one that keeps tutti's message.
    assert isinstance(caught.value, tutti.TuttiPeerLost) or "TuttiPeerLost" in message \
        or "was lost" in message, repr(caught.value)
    with pytest.raises(tutti.TuttiPeerLost, match=f"rank {lost}"):
        dist.all_reduce(torch.ones(2))
