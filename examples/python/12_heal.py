"""12_heal: data-parallel training that survives kill -9 of a rank. When a rank dies,
the others see TuttiPeerLost, shrink to the survivors, grow back to the job's size with
the process the launcher started in its place, and rank 0 broadcasts the model, the
optimizer's state and the step to it; training goes on, and at the end the model is
the same on every rank. The model, the data and the sharding are 11_data_parallel's
MLP on two spirals; what this adds is the healing (docs/elastic.md).

Run, killing rank 2 at step 40 (it does it to itself: os.kill(getpid(), SIGKILL)):
  PYTHONPATH=build/python build/bin/tutti launch -n 4 --restart 1 -- \\
      python3 examples/python/12_heal.py --kill 2:40
With --signal STOP rank 2 freezes instead: the others wait for it until the store
declares it lost (TUTTI_HEARTBEAT_TIMEOUT_MS, 20 s by default), and the launcher kills
it and starts it again.

Prints one line per event, e.g.
  [0] rank 0 of 4: training, 200 steps
  tutti launch: rank 2 (pid 4242) was killed by signal 9 (SIGKILL); started it again ...
  [0] rank 0 of 4: step 40 failed: all_reduce #... on comm "world" (rank 0 of 4): rank 2 ... was lost ...
  [0] rank 0 of 3: shrank to the 3 survivors
  [2+1] rank 3 of 4: joined the job
  [0] rank 0 of 4: grew back to 4 ranks; resuming at step 40
  ...
  [0] rank 0 of 4: done: step 200, loss 0.0013, accuracy 100.0%, model identical on every rank
"""
import argparse
import os
import signal

import torch

import tutti

SAMPLES = 840
STEPS = 200


def say(comm, text):
    print(f"rank {comm.rank()} of {comm.size()}: {text}", flush=True)


def make_data():
    """Two interleaved spirals, one turn each, from a seed: the same on every rank."""
    data = torch.Generator().manual_seed(2024)
    turn = torch.rand(SAMPLES, generator=data) * 2 * torch.pi
    label = torch.arange(SAMPLES) % 2
    radius = turn / (2 * torch.pi) * 2 + 0.2
    points = torch.stack([radius * torch.cos(turn + torch.pi * label),
                          radius * torch.sin(turn + torch.pi * label)], dim=1)
    return points + 0.05 * torch.randn(SAMPLES, 2, generator=data), label


def make_model():
    model = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                                torch.nn.Tanh(), torch.nn.Linear(32, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    # Adam's state made now rather than at its first step, so that every rank, a
    # joiner too, holds the same tensors for rank 0 to broadcast into.
    for p in model.parameters():
        optimizer.state[p] = {"step": torch.tensor(0.0), "exp_avg": torch.zeros_like(p),
                              "exp_avg_sq": torch.zeros_like(p)}
    return model, optimizer


def state_tensors(model, optimizer):
    """Everything training depends on, in the same order on every rank."""
    tensors = []
    for p in model.parameters():
        state = optimizer.state[p]
        tensors += [p.data, state["step"], state["exp_avg"], state["exp_avg_sq"]]
    return tensors


def share_state(comm, model, optimizer, step):
    """Rank 0's model, optimizer state and step, to every rank; returns the step."""
    for tensor in state_tensors(model, optimizer):
        comm.broadcast(tensor, src=0)
    at = torch.tensor([step], dtype=torch.int64)
    comm.broadcast(at, src=0)
    return int(at.item())


def train_step(comm, model, optimizer, points, label):
    """One step on this rank's shard; gradients and loss averaged over the ranks."""
    x, y = points[comm.rank()::comm.size()], label[comm.rank()::comm.size()]
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    for p in model.parameters():
        comm.all_reduce(p.grad, op="avg")
    overall = loss.detach().clone()
    comm.all_reduce(overall, op="avg")
    optimizer.step()
    return overall.item()


def identical(comm, model):
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    comm.all_reduce(high, op="max")
    comm.all_reduce(low, op="min")
    return bool(torch.equal(high, flat) and torch.equal(low, flat))


def heal(comm, size, step, error):
    """After a loss: the survivors shrink, then grow back to size with the joiners."""
    say(comm, f"step {step} failed: {error}")
    survivors = comm.shrink()
    comm.destroy()
    say(survivors, f"shrank to the {survivors.size()} survivors")
    grown = survivors.grow(size - survivors.size())
    survivors.destroy()
    return grown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kill", metavar="RANK:STEP", help="rank RANK kills itself (SIGKILL) at step STEP")
    parser.add_argument("--signal", default="KILL", choices=["KILL", "STOP"],
                        help="what --kill sends: KILL, or STOP (frozen: the store declares it lost when its "
                             "heartbeats stop, and tutti launch --restart kills it)")
    args = parser.parse_args()
    kill_rank, kill_step = map(int, args.kill.split(":")) if args.kill else (-1, -1)
    torch.set_num_threads(1)  # one core per rank
    torch.manual_seed(1000 + int(os.environ.get("TUTTI_RANK", "0")))  # rank 0's broadcast unifies them
    points, label = make_data()
    model, optimizer = make_model()

    # A process the launcher started in place of a lost one joins the running job.
    joining = os.environ.get("TUTTI_JOIN") == "1"
    comm = tutti.join() if joining else tutti.init()
    size = int(os.environ.get("TUTTI_WORLD_SIZE", comm.size()))  # the job's size, to grow back to
    say(comm, "joined the job" if joining else f"training, {STEPS} steps")
    doomed = not joining and comm.rank() == kill_rank  # --kill: this process dies at kill_step
    step = share_state(comm, model, optimizer, 0)
    loss = float("nan")
    while step < STEPS:
        try:
            if doomed and step == kill_step:
                os.kill(os.getpid(), getattr(signal, "SIG" + args.signal))
            loss = train_step(comm, model, optimizer, points, label)
            step += 1
        except tutti.TuttiPeerLost as error:
            comm = heal(comm, size, step, error)
            step = share_state(comm, model, optimizer, step)
            say(comm, f"grew back to {comm.size()} ranks; resuming at step {step}")
    with torch.no_grad():
        accuracy = 100.0 * int((model(points).argmax(dim=1) == label).sum()) / SAMPLES
    same = identical(comm, model)
    say(comm, f"done: step {step}, loss {loss:.4f}, accuracy {accuracy:.1f}%, "
              f"model {'identical' if same else 'DIFFERENT'} on every rank")
    comm.destroy()
    if not same:
        raise SystemExit("12_heal: the ranks' models differ")


main()
