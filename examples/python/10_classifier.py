"""10_classifier: the torch.distributed tutorial's single_layer.py. A one-layer
classifier's loss over a batch split across the ranks: rank 0 prepares the data while
the others wait at a barrier (the tutorial's download), rank 0's random weights go to
every rank by an asynchronous broadcast while each rank loads its samples, each rank
computes the log-softmax loss of its samples, and reduce with "sum" gives rank 0 the
sum, divided by the world size for the loss over the whole batch. Instead of CIFAR-10
the data is 3x32x32 images made from a seed; rank 0 checks the result against the loss
over the whole batch computed alone.

Run (any number of ranks; the tutorial runs 2):
  PYTHONPATH=build/python build/bin/tutti launch -n 2 -- python3 examples/python/10_classifier.py

Prints:
  [0] Rank: 0, data ready.
  [1] Rank: 1, weights received.
  [0] Rank: 0, loss of my 128 images: -16.0594.
  [1] Rank: 1, loss of my 128 images: -17.7946.
  [0] Rank: 0, Final Loss: -16.9270 (the whole batch of 256 on one rank: -16.9270).
"""
import os
import tempfile

import torch

import tutti

INPUT_SIZE, CLASSES, PER_RANK_BATCH = 3 * 32 * 32, 10, 128


def say(text):
    print(f"Rank: {tutti.rank()}, {text}.", flush=True)


tutti.init()
rank, size = tutti.rank(), tutti.world_size()
torch.set_num_threads(1)

# The tutorial's rank 0 downloads the dataset while the others wait at a barrier; here
# it writes the images to a file that every rank then reads.
folder = torch.zeros(1, dtype=torch.int64)  # rank 0's pid names the shared folder
if rank == 0:
    folder[0] = os.getpid()
tutti.broadcast(folder, src=0)
path = os.path.join(tempfile.gettempdir(), f"tutti_10_classifier_{int(folder)}.pt")
if rank == 0:
    images = torch.rand(PER_RANK_BATCH * size, INPUT_SIZE, generator=torch.Generator().manual_seed(5))
    labels = torch.randint(CLASSES, (PER_RANK_BATCH * size,), generator=torch.Generator().manual_seed(6))
    torch.save((images, labels), path)
    say("data ready")
tutti.barrier()
images, labels = torch.load(path)
tutti.barrier()  # everyone has read it: rank 0 may remove it
if rank == 0:
    os.remove(path)

weights = (torch.rand(INPUT_SIZE, CLASSES, generator=torch.Generator().manual_seed(7)) if rank == 0
           else torch.zeros(INPUT_SIZE, CLASSES))
handle = tutti.broadcast(weights, src=0, async_op=True)

# Load this rank's images while the weights travel (the tutorial's sample i + size * rank).
mine = slice(rank * PER_RANK_BATCH, (rank + 1) * PER_RANK_BATCH)
batch, target = images[mine], torch.nn.functional.one_hot(labels[mine], CLASSES).float()

handle.wait()
say("weights received")
log_probabilities = torch.nn.LogSoftmax(dim=1)(batch @ weights)
# The tutorial's loss: the mean over the batch of the log-probability of the true class.
loss = (log_probabilities * target).sum(dim=1).mean()
say(f"loss of my {PER_RANK_BATCH} images: {loss.item():.4f}")

tutti.reduce(loss, dst=0, op="sum")
if rank == 0:
    whole = (torch.nn.LogSoftmax(dim=1)(images @ weights)
             * torch.nn.functional.one_hot(labels, CLASSES)).sum(dim=1).mean()
    say(f"Final Loss: {loss.item() / size:.4f} (the whole batch of {PER_RANK_BATCH * size} "
        f"on one rank: {whole.item():.4f})")
tutti.destroy()
