"""A rank that leaves without destroying its communicator: the others' collective
raises TuttiPeerLost naming it, Work.wait raises the same, and the survivors shrink
to a communicator of their own and go on.

Run with the launcher told to keep going after a rank ends:
  tutti launch -n 3 --keep-going -- python3 -m pytest test_peer_lost.py
"""
import os

import pytest
import torch

import tutti


def test_survivors_see_the_loss_and_go_on():
    world = tutti.init(timeout=60)
    rank, size = world.rank(), world.size()
    lost = size - 1
    world.barrier()
    if rank == lost:
        os._exit(0)  # gone, without destroying anything: the store declares it lost
    pending = world.all_reduce(torch.ones(4), async_op=True)
    with pytest.raises(tutti.TuttiPeerLost) as caught:
        pending.wait(30)
    assert caught.value.status == tutti._capi.ERR_PEER_LOST
    assert f"rank {lost}" in caught.value.message, caught.value.message
    with pytest.raises(tutti.TuttiPeerLost):
        pending.wait()  # a failed Work says so at every wait
    with pytest.raises(tutti.TuttiPeerLost, match=f"rank {lost}"):
        world.all_reduce(torch.ones(4))
    survivors = world.shrink()
    assert survivors.size() == size - 1 and survivors.rank() == rank
    x = torch.ones(4)
    survivors.all_reduce(x)
    assert torch.all(x == size - 1)
    survivors.destroy()
    tutti.destroy()
