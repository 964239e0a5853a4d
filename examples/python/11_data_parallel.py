"""11_data_parallel: data-parallel training, as the third tutorial's SimpleDDP.py and
DDP.py do with DistributedDataParallel, written out with tutti: every rank holds the
whole model and a shard of the data; rank 0's initial weights are broadcast; after each
backward pass all_reduce averages the gradients, so every rank takes the same step and
the model stays identical everywhere (checked after every step). First a linear
regression, then a small MLP classifying two interleaved spirals (one turn each). The data is made
here from a seed: no download. PyTorch does the model, tutti every collective.

Run (on a number of ranks that divides 840, such as 1 to 8: equal shards make the
average of the ranks' gradients the gradient over all samples):
  PYTHONPATH=build/python build/bin/tutti launch -n 4 -- python3 examples/python/11_data_parallel.py

Prints the loss over all samples as it falls, and that the replicas never differed:
  [0] Rank: 0, linear regression, 840 samples, 210 on each of 4 ranks.
  [0] Rank: 0, linear regression, step 0, loss 18.5894.
  [0] Rank: 0, linear regression, step 25, loss 0.0097.
  ...
  [0] Rank: 0, linear regression, step 100, loss 0.0094.
  [0] Rank: 0, linear regression, weights [ 2.0 -1.0 0.5 3.0 ] bias 1.0 (true: 2 -1 0.5 3, 1).
  [0] Rank: 0, mlp, step 0, loss 0.6894.
  [0] Rank: 0, mlp, step 75, loss 0.0022.
  ...
  [0] Rank: 0, mlp, step 300, loss 0.0002.
  [0] Rank: 0, mlp, accuracy 100.0% (840 of 840).
  [0] Rank: 0, the model was identical on every rank after each of 402 steps.
and the same lines from every rank.
"""
import torch

import tutti

SAMPLES = 840


def say(text):
    print(f"Rank: {tutti.rank()}, {text}.", flush=True)


def shard(*tensors):
    """This rank's samples: every size-th one, from its rank on."""
    return [t[tutti.rank()::tutti.world_size()] for t in tensors]


def identical(model):
    """True when every rank holds bit-identical parameters: the maximum and the minimum
    over the ranks of each parameter are the parameter itself."""
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    tutti.all_reduce(high, op="max")
    tutti.all_reduce(low, op="min")
    return bool(torch.equal(high, flat) and torch.equal(low, flat))


def train(name, model, inputs, targets, loss_function, steps, optimizer):
    """Data-parallel training; returns the per-step losses over all samples."""
    for p in model.parameters():  # DistributedDataParallel does this at construction
        tutti.broadcast(p.data, src=0)
    x, y = shard(inputs, targets)
    losses = []
    for step in range(steps + 1):
        optimizer.zero_grad()
        loss = loss_function(model(x), y)
        loss.backward()
        for p in model.parameters():  # what DDP's gradient hooks do, bucket by bucket
            tutti.all_reduce(p.grad, op="avg")
        overall = loss.detach().clone()
        tutti.all_reduce(overall, op="avg")
        losses.append(overall.item())
        if step % (steps // 4) == 0:
            say(f"{name}, step {step}, loss {overall.item():.4f}")
        if step < steps:
            optimizer.step()
        if not identical(model):
            raise SystemExit(f"11_data_parallel: rank {tutti.rank()}'s {name} differs from "
                             f"another rank's after step {step}")
    return losses


tutti.init()
size = tutti.world_size()
if SAMPLES % size:
    raise SystemExit(f"11_data_parallel: {size} ranks do not split {SAMPLES} samples evenly; "
                     f"use a divisor of {SAMPLES}, such as 4")
torch.set_num_threads(1)  # one core per rank
torch.manual_seed(1000 + tutti.rank())  # a different initial model on each rank: broadcast fixes it
data = torch.Generator().manual_seed(2024)  # the same data on every rank

# Linear regression: y = x . (2, -1, 0.5, 3) + 1, plus noise.
say(f"linear regression, {SAMPLES} samples, {SAMPLES // size} on each of {size} ranks")
x = torch.randn(SAMPLES, 4, generator=data)
y = x @ torch.tensor([[2.0], [-1.0], [0.5], [3.0]]) + 1 + 0.1 * torch.randn(SAMPLES, 1, generator=data)
linear = torch.nn.Linear(4, 1)
losses = train("linear regression", linear, x, y, torch.nn.functional.mse_loss, 100,
               torch.optim.SGD(linear.parameters(), lr=0.1))
weights = " ".join(f"{w:.1f}" for w in linear.weight.detach().flatten().tolist())
say(f"linear regression, weights [ {weights} ] bias {linear.bias.item():.1f} (true: 2 -1 0.5 3, 1)")

# A small MLP on two interleaved spirals (one turn each), classes 0 and 1.
turn = torch.rand(SAMPLES, generator=data) * 2 * torch.pi
label = torch.arange(SAMPLES) % 2
radius = turn / (2 * torch.pi) * 2 + 0.2
points = torch.stack([radius * torch.cos(turn + torch.pi * label),
                      radius * torch.sin(turn + torch.pi * label)], dim=1)
points += 0.05 * torch.randn(SAMPLES, 2, generator=data)
mlp = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                          torch.nn.Tanh(), torch.nn.Linear(32, 2))
# Adam keeps state per parameter; with the same gradients everywhere it stays the same too.
mlp_losses = train("mlp", mlp, points, label, torch.nn.functional.cross_entropy, 300,
                   torch.optim.Adam(mlp.parameters(), lr=0.02))
with torch.no_grad():
    correct = int((mlp(points).argmax(dim=1) == label).sum())
say(f"mlp, accuracy {100 * correct / SAMPLES:.1f}% ({correct} of {SAMPLES})")

steps = len(losses) + len(mlp_losses)
say(f"the model was identical on every rank after each of {steps} steps")
if not (losses[-1] < losses[0] / 10 and mlp_losses[-1] < mlp_losses[0] / 2):
    raise SystemExit(f"11_data_parallel: the loss did not fall: linear {losses[0]:.4f} -> "
                     f"{losses[-1]:.4f}, mlp {mlp_losses[0]:.4f} -> {mlp_losses[-1]:.4f}")
tutti.destroy()
