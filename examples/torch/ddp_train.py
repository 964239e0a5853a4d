"""ddp_train: the training loop of tutorials 001 and 003 (DistributedDataParallel,
DistributedSampler, a DataLoader, the loss printed by rank 0), on backend "tutti".

Changed from the tutorials, and only this: CPU tensors (no device_ids), a small MLP on
data made here from a seed instead of MNIST (no download), 3 epochs; the rank comes
from whichever launcher started it (tutti launch, torchrun, srun or mpirun), as 001
reads Open MPI's variables and 003 Slurm's. The backend is the one word that differs
from the same script on gloo (BACKEND, or the environment variable of that name).

Run:
  PYTHONPATH=build/python build/bin/tutti launch -n 2 -- /usr/bin/python3 examples/torch/ddp_train.py
  srun -n 4 /usr/bin/python3 examples/torch/ddp_train.py     (export MASTER_ADDR and MASTER_PORT)
Prints, from rank 0, one line per epoch and a checksum of the final weights:
  [0] Epoch_ 1: Loss_0.5862
  ...
  [0] weights sum 0.772243677427 (backend tutti, 2 ranks)
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import tutti.torch  # registers backend "tutti"

BACKEND = os.environ.get("BACKEND", "tutti")


def env(*names):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    raise KeyError(f"none of {names} is set: start this under tutti launch, torchrun, srun or mpirun")


WORLD_RANK = env("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")
WORLD_SIZE = env("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")

dist.init_process_group(backend=BACKEND, rank=WORLD_RANK, world_size=WORLD_SIZE)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(),
                                          torch.nn.Linear(64, 2))

    def forward(self, x):
        return self.layers(x)


torch.manual_seed(0)
inputs = torch.randn(1024, 20)
labels = (inputs[:, :10].sum(1) > inputs[:, 10:].sum(1)).long()
train_set = TensorDataset(inputs, labels)

model = Net()
ddp_model = DDP(model)
optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.05, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()

train_sampler = DistributedSampler(train_set, num_replicas=WORLD_SIZE, rank=WORLD_RANK)
train_loader = DataLoader(train_set, batch_size=32, sampler=train_sampler)

for epoch in range(3):
    train_sampler.set_epoch(epoch)
    total = torch.zeros(2, dtype=torch.float64)
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(ddp_model(x), y)
        loss.backward()
        optimizer.step()
        total += torch.tensor([loss.item() * len(y), len(y)], dtype=torch.float64)
    dist.all_reduce(total)
    if WORLD_RANK == 0:
        print("Epoch_{:2d}: Loss_{:.4f}".format(epoch + 1, float(total[0] / total[1])), flush=True)

if WORLD_RANK == 0:
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    print(f"weights sum {checksum:.12f} (backend {BACKEND}, {WORLD_SIZE} ranks)", flush=True)
    torch.save(model.state_dict(), os.environ.get("SAVE_TO", os.devnull))
dist.destroy_process_group()
