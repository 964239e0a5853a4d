"""The healing examples (docs/elastic.md) as their headers run them: tutti launch -n 4
--restart 1, rank 2 killing itself with SIGKILL at step 40, or freezing itself with
SIGSTOP. The launcher must start
it again (output tagged [2+1]), every survivor must shrink to 3 and grow back to 4,
the new process must join as rank 3, and every rank must end at the last step with
the same model; the job must exit 0. Also a job whose restarts are used up: the
failure then stops the job as without --restart.
"""
import os
import re
import subprocess

SOURCE = os.environ["TUTTI_SOURCE_DIR"]
TUTTI = os.environ["TUTTI_BIN"]


# A frozen rank is declared lost after the heartbeat timeout: 3 s rather than 20 (and
# not so short that a rank merely descheduled on a busy machine would be).
FAST_HEARTBEATS = {"TUTTI_HEARTBEAT_INTERVAL_MS": "500", "TUTTI_HEARTBEAT_TIMEOUT_MS": "3000"}


def launch(*command, restarts=1, env=None):
    result = subprocess.run(
        [TUTTI, "launch", "-n", "4", "--restart", str(restarts), "--timeout", "200", "--", *command],
        capture_output=True, text=True, timeout=240, env={**os.environ, **(env or {})})
    lines = {}
    for line in result.stdout.splitlines():
        match = re.match(r"\[(\d+(?:\+\d+)?)\] (.*)", line)
        assert match, f"untagged line {line!r}\n{result.stdout}{result.stderr}"
        lines.setdefault(match[1], []).append(match[2])
    return result, lines


def expect_healed(result, lines, steps, done):
    everything = result.stdout + result.stderr
    assert result.returncode == 0, everything
    assert sorted(lines) == ["0", "1", "2", "2+1", "3"], everything
    assert re.search(r"tutti launch: rank 2 \(pid \d+\) was killed by signal 9 \(SIGKILL\); started it again as "
                     r"pid \d+, which joins the job as the others grow \(restart 1 of 1\)", result.stderr), everything
    assert lines["2"] == [f"rank 2 of 4: training, {steps} steps"], everything
    assert lines["2+1"][0] == "rank 3 of 4: joined the job", everything
    # The survivors: old ranks 0, 1 and 3, ranks 0, 1 and 2 after the shrink.
    for slot, after in (("0", 0), ("1", 1), ("3", 2)):
        said = lines[slot]
        assert said[0] == f"rank {slot} of 4: training, {steps} steps", everything
        # 39 for a survivor still finishing step 39's all_reduce when the loss arrives:
        # a lost rank fails every operation in flight on the communicator.
        assert re.match(rf"rank {slot} of 4: step (39|40) failed: ", said[1]), everything
        assert said[2] == f"rank {after} of 3: shrank to the 3 survivors", everything
        assert said[3] == f"rank {after} of 4: grew back to 4 ranks; resuming at step 40", everything
    finals = {slot: said[-1] for slot, said in lines.items() if slot != "2"}
    for slot, final in finals.items():
        assert re.fullmatch(done, final), f"{slot}: {final}\n{everything}"
    # Identical models print identical lines, but for the rank.
    assert len({final.split(":", 1)[1] for final in finals.values()}) == 1, everything


def test_python_heals():
    result, lines = launch(os.environ["TUTTI_PYTHON"], os.path.join(SOURCE, "examples", "python", "12_heal.py"),
                           "--kill", "2:40")
    expect_healed(result, lines, 200,
                  r"rank \d of 4: done: step 200, loss 0\.\d+, accuracy \d+\.\d%, model identical on every rank")


def test_lua_heals():
    result, lines = launch(TUTTI, os.path.join(SOURCE, "examples", "lua", "11_heal.lua"), "2:40")
    expect_healed(result, lines, 120,
                  r"rank \d of 4: done: step 120, weights 2\.00 -1\.00 0\.50 3\.00 bias 1\.00, "
                  r"identical on every rank")


def test_a_frozen_rank_is_killed_and_replaced():
    """SIGSTOP instead of SIGKILL: the store declares rank 2 lost when its heartbeats
    stop, the launcher kills it (frozen, it would never exit) and starts it again."""
    python = [os.environ["TUTTI_PYTHON"], os.path.join(SOURCE, "examples", "python", "12_heal.py"), "--kill", "2:40",
              "--signal", "STOP"]
    lua = [TUTTI, os.path.join(SOURCE, "examples", "lua", "11_heal.lua"), "2:40", "STOP"]
    for command, steps, done in ((python, 200, r"rank \d of 4: done: step 200, loss 0\.\d+, accuracy \d+\.\d%, model "
                                                r"identical on every rank"),
                                 (lua, 120, r"rank \d of 4: done: step 120, weights 2\.00 -1\.00 0\.50 3\.00 bias "
                                            r"1\.00, identical on every rank")):
        result, lines = launch(*command, env=FAST_HEARTBEATS)
        assert re.search(r"tutti launch: rank 2 \(pid \d+\) was declared lost by the store: it sent nothing to the "
                         r"store for .*; killing it, so that it can be started again \(--restart\)", result.stderr), \
            result.stdout + result.stderr
        expect_healed(result, lines, steps, done)


def test_no_restart_left_stops_the_job():
    result, lines = launch(TUTTI, os.path.join(SOURCE, "examples", "lua", "11_heal.lua"), "2:40", restarts=0)
    assert result.returncode == 137, result.stdout + result.stderr
    assert re.search(r"tutti launch: rank 2 \(pid \d+\) was killed by signal 9 \(SIGKILL\); stopping the other 3 "
                     r"ranks", result.stderr), result.stdout + result.stderr
    assert "2+1" not in lines
