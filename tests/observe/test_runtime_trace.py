"""TUTTI_TRACE through real jobs, as a user runs them (TUTTI_BIN, the tutti binary): a
4-rank job with every collective, blocking and nonblocking point-to-point, a split
and a failure (tests/observe/scripts/traced.lua) writes one trace per rank, each valid
by the format's rules (check_chrome_trace.py), with one begin/end pair per operation;
tutti launch merges them, and in the merged timeline every receive ends after its
send began. A folder that cannot be written is one warning, and the job runs on."""
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "scripts", "traced.lua")
CHECKER = os.path.join(HERE, "check_chrome_trace.py")
TUTTI = os.environ.get("TUTTI_BIN", "tutti")


def run_job(ranks, trace, **environment):
    env = dict(os.environ, NO_COLOR="1", TUTTI_CHECK="1", TUTTI_TRACE=str(trace), **environment)
    return subprocess.run([TUTTI, "run", "-n", str(ranks), SCRIPT], capture_output=True, text=True, timeout=60,
                          env=env)


def check(path):
    result = subprocess.run([sys.executable, CHECKER, "--tutti", "--one-pair-per-operation", str(path)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def events(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    trace = tmp_path_factory.mktemp("trace")
    result = run_job(4, trace)
    assert result.returncode == 0, result.stdout + result.stderr
    return trace, result


def track_names(trace_events):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace_events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def test_each_rank_writes_a_valid_trace_with_one_pair_per_operation(job):
    trace, result = job
    files = sorted(trace.glob("rank-*.json"))
    assert len(files) == 4, files
    counts = {}
    for line in result.stdout.splitlines():
        rank, _, rest = line.partition("] ")
        if rest.startswith("collectives"):
            _, _, world, _, split = rest.split()
            counts[int(rank.strip("["))] = (int(world), int(split))
    assert sorted(counts) == [0, 1, 2, 3], result.stdout
    for path in files:
        check(path)
        trace_events = events(path)
        rank = trace_events[0]["pid"]
        names = track_names(trace_events)
        begun = Counter(names[(e["pid"], e["tid"])] for e in trace_events
                        if e["ph"] == "B" and e.get("cat") == "collective")
        world, split = counts[rank]
        assert begun["world"] == world, (rank, begun)
        assert begun[f"world.split0.color{rank % 2}"] == split, (rank, begun)
        ends = [e for e in trace_events if e["ph"] == "E" and e.get("cat") == "collective"]
        failed = [e for e in ends if e["args"]["status"] != "OK"]
        if rank % 2:
            assert [e["args"]["status"] for e in failed] == ["MISMATCH"], failed
            assert "different collectives" in failed[0]["args"]["error"]
        else:
            assert failed == []
        done = [e for e in ends if e["args"]["status"] == "OK"]
        assert all(e["args"].get("algorithm") and e["args"].get("transport") for e in done), done
        begins = [e for e in trace_events if e["ph"] == "B" and e.get("cat") == "collective"]
        reduce = next(e for e in begins if e["name"] == "reduce")
        assert reduce["args"] == {"seq": 2, "bytes": 32, "count": 8, "dtype": "float32", "op": "sum", "root": 0}
        p2p = Counter((e["ph"], e["name"]) for e in trace_events if e.get("cat") == "p2p")
        extra = {0: ("recv", 1), 1: ("send", 1)}.get(rank)  # rank 1's late send to rank 0
        expected = Counter({("b", "send"): 2, ("e", "send"): 2, ("b", "recv"): 2, ("e", "recv"): 2})
        if extra:
            expected[("b", extra[0])] += 1
            expected[("e", extra[0])] += 1
        assert p2p == expected, p2p
        # Waits that blocked: rank 0's on rank 1, which computes first, surely; others may
        # find their operation done, which is no wait.
        waits = [e for e in trace_events if e.get("cat") == "wait"]
        assert all(e["args"]["status"] == "OK" for e in waits if e["ph"] == "e"), waits
        assert len(waits) >= (2 if rank == 0 else 0), waits
        control = Counter(e["name"] for e in trace_events if e["ph"] == "B" and e.get("cat") == "control")
        assert control["init"] == 1 and control["meeting"] == 1 and control["split"] == 1, control
        assert any(e["ph"] == "X" and e.get("cat") == "store" for e in trace_events)
        assert any(e["ph"] == "M" and e["name"] == "tutti_epoch" for e in trace_events)


def test_the_launcher_merges_a_timeline_in_which_receives_end_after_their_sends_begin(job):
    trace, result = job
    assert f"the job's timeline is {trace}/timeline.json (4 ranks" in result.stderr, result.stderr
    timeline = trace / "timeline.json"
    check(timeline)
    trace_events = events(timeline)
    begun = {}
    sends, receives = defaultdict(list), defaultdict(list)
    for e in trace_events:
        if e.get("cat") != "p2p":
            continue
        if e["ph"] == "b":
            begun[(e["pid"], e["id"])] = e
        else:
            b = begun[(e["pid"], e["id"])]
            key = (e["pid"], b["args"]["peer"], b["args"]["tag"]) if b["name"] == "send" else \
                  (b["args"]["peer"], e["pid"], b["args"]["tag"])
            (sends if b["name"] == "send" else receives)[key].append((b["ts"], e["ts"]))
    assert len(sends) == 9 and sends.keys() == receives.keys(), (sends, receives)
    for key, sent in sends.items():
        received = receives[key]
        assert len(sent) == len(received) == 1, key
        assert received[0][1] >= sent[0][0], f"the recv of {key} ends at {received[0][1]} before its send begins"


def test_a_ring_that_fills_drops_whole_operations_and_says_so(tmp_path):
    # 20,000 all_reduces between two heartbeats: more events than a ring holds.
    script = tmp_path / "burst.lua"
    script.write_text("local t = tutti.ones(2)\nfor _ = 1, 20000 do tutti.all_reduce(t) end\nprint('done')\n")
    trace = tmp_path / "trace"
    result = subprocess.run([TUTTI, "run", "-n", "2", str(script)], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, TUTTI_TRACE=str(trace), TUTTI_HEARTBEAT_INTERVAL_MS="60000",
                                     TUTTI_HEARTBEAT_TIMEOUT_MS="120000"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count("were dropped: this rank recorded faster than its event loop wrote them") == 2, \
        result.stderr
    for path in sorted(trace.glob("rank-*.json")):
        check(path)  # every begin still has its end
        trace_events = events(path)
        end = next(e for e in trace_events if e["ph"] == "M" and e["name"] == "tutti_trace_end")
        kept = sum(1 for e in trace_events if e["ph"] == "B" and e.get("cat") == "collective")
        assert end["args"]["dropped"] > 0 and 1000 < kept < 20000, (end, kept)
        assert end["args"]["dropped"] == 2 * (20000 - kept), (end, kept)


def test_an_unwritable_folder_is_one_warning_and_the_job_runs_untraced(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    result = run_job(4, blocked / "trace")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.count("TUTTI_TRACE") == 1, result.stderr
    assert "cannot write to" in result.stderr and "the job runs untraced" in result.stderr, result.stderr
    # A rank started by hand (srun, mpirun, alone) says so itself, once, and runs on.
    script = tmp_path / "alone.lua"
    script.write_text('tutti.all_reduce(tutti.ones(4))\nprint("ran")\n')
    alone = subprocess.run([TUTTI, str(script)], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, TUTTI_TRACE=str(blocked / "trace")))
    assert alone.returncode == 0 and alone.stdout == "ran\n", alone.stdout + alone.stderr
    assert alone.stderr.count("TUTTI_TRACE: cannot write") == 1, alone.stderr
    assert "runs untraced" in alone.stderr
