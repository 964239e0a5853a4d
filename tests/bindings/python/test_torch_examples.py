"""Runs examples/torch as their headers say (tutti launch -n N -- python3 X.py), on
backend "tutti" and, with only the backend name changed, on gloo, and compares:

- collectives.py: every matrix and the final loss the same, except where torch leaves the
  result undefined (reduce's off dst: tutti leaves it as it was) and reduce_scatter,
  which gloo lacks;
- ddp_train.py: the same losses and final weights, bit for bit on 2 ranks (a sum of two
  values does not depend on its order), under tutti launch and under torchrun.
"""
import os
import re
import signal
import subprocess
import tempfile

import torch
from ports import free_port

SOURCE = os.environ["TUTTI_SOURCE_DIR"]
EXAMPLES = os.path.join(SOURCE, "examples", "torch")


def launch(example, ranks, backend, **env):
    result = subprocess.run(
        [os.environ["TUTTI_BIN"], "launch", "-n", str(ranks), "--timeout", "100", "--",
         os.environ["TUTTI_PYTHON"], os.path.join(EXAMPLES, example)],
        capture_output=True, text=True, timeout=130, env=dict(os.environ, BACKEND=backend, **env))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def matrices(lines):
    """{(rank, title): 11 rows} from the lines collectives.py prints."""
    found, by_rank = {}, {}
    for line in lines:
        rank, text = re.match(r"\[(\d+)\] (.*)", line).groups()
        by_rank.setdefault(int(rank), []).append(text)
    for rank, texts in by_rank.items():
        for i, text in enumerate(texts):
            title = re.match(r"Rank: \d+, (.*)\.$", text)
            if title and i + 1 < len(texts) and not texts[i + 1].startswith("Rank:"):
                found[(rank, title[1])] = [list(map(int, row.split())) for row in texts[i + 1:i + 12]]
    return found


def test_collectives_as_on_gloo():
    ours, theirs = launch("collectives.py", 2, "tutti"), launch("collectives.py", 2, "gloo")
    mine, reference = matrices(ours), matrices(theirs)
    scattered = {key: value for key, value in mine.items() if "reduce_scatter" in key[1]}
    assert len(scattered) == 2
    # After reduce, only dst's tensor is defined (torch's docs); gloo leaves partial sums
    # in the others, tutti leaves them as they were.
    reduced_elsewhere = (1, "after reduce (ReduceOp.MAX)")
    assert mine.pop(reduced_elsewhere) == mine[(1, "before reduce")]
    reference.pop(reduced_elsewhere)
    assert {k: v for k, v in mine.items() if k not in scattered} == reference
    loss = [line for line in ours if "Final Loss" in line]
    assert loss and loss == [line for line in theirs if "Final Loss" in line]
    # reduce_scatter: block r on rank r is the MAX over ranks of each rank's input r: a
    # disk (block 0) or a square (block 1) of rank 1's value 2, drawn where rank 0 drew 1s.
    for rank, value in ((0, "disk"), (1, "square")):
        block = torch.tensor(scattered[(rank, "after reduce_scatter (ReduceOp.MAX)")])
        assert set(block.unique().tolist()) == {0, 2}, (value, block)
    disk = torch.tensor(scattered[(0, "after reduce_scatter (ReduceOp.MAX)")]) > 0
    assert torch.equal(disk, torch.tensor(mine[(0, "before all_reduce")]) > 0)


_runs = {}


def ddp_run(backend, ranks=2):
    """(the loss lines, the final state_dict) of ddp_train.py; each run made once."""
    if (backend, ranks) not in _runs:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, f"{backend}.pt")
            lines = launch("ddp_train.py", ranks, backend, SAVE_TO=path)
            _runs[(backend, ranks)] = ([line[4:] for line in lines if "Epoch_" in line],
                                       torch.load(path))
    return _runs[(backend, ranks)]


def test_ddp_train_as_on_gloo():
    """Bit for bit on 2 ranks; tests/slurm/test_srun_torch.sh compares 3 and 4 ranks,
    where tutti and gloo add the gradients in different orders (same losses printed,
    weights within float32 rounding)."""
    (our_losses, ours), (their_losses, theirs) = ddp_run("tutti"), ddp_run("gloo")
    assert len(our_losses) == 3 and our_losses == their_losses
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key


def test_ddp_train_under_torchrun():
    """Debian 12's torch 1.13 torchrun fails at start under Python 3.11 (Std.from_str
    returns None for "0"); a --redirects/--tee mapping that names only local rank 9
    avoids that code path, and then the example runs as under tutti launch."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "torchrun.pt")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TUTTI_") or k in ("TUTTI_SOURCE_DIR", "TUTTI_BIN", "TUTTI_PYTHON")}
        port = free_port()
        # Its own process group, so that a hang kills torchrun and its workers, and only them.
        process = subprocess.Popen(
            [os.environ["TUTTI_PYTHON"], "-m", "torch.distributed.run", "--redirects", "9:1",
             "--tee", "9:1", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
             "--master_port", str(port), os.path.join(EXAMPLES, "ddp_train.py")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
            env=dict(env, SAVE_TO=path, BACKEND="tutti"))
        try:
            stdout, stderr = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
        result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
        assert result.returncode == 0, result.stdout + result.stderr
        losses = [line for line in result.stdout.splitlines() if "Epoch_" in line]
        reference, weights = ddp_run("gloo")
        assert losses == reference, (losses, reference)
        trained = torch.load(path)
        for key in weights:
            assert torch.equal(trained[key], weights[key]), key
