"""check_chrome_trace.py: every rule it states at its top, broken once, is caught and
named; the crafted per-rank files of tests/observe/data pass."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_chrome_trace.py")
JOB = os.path.join(HERE, "data", "job")


def run_checker(*args):
    return subprocess.run([sys.executable, CHECKER, *args], capture_output=True, text=True, timeout=30)


def write_trace(tmp_path, events, **top):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events, **top}))
    return str(path)


def B(ts, tid=1, name="all_reduce", **more):
    return {"ph": "B", "pid": 0, "tid": tid, "ts": ts, "name": name, "cat": "collective", "args": {"seq": 1}, **more}


def E(ts, tid=1, status="OK", **more):
    return {"ph": "E", "pid": 0, "tid": tid, "ts": ts, "args": {"status": status}, **more}


def test_crafted_rank_files_pass_every_rule():
    for name in ("rank-0.h0.100.json", "rank-1.h0.101.json", "rank-2.h1.200.json"):
        result = run_checker("--tutti", "--one-pair-per-operation", os.path.join(JOB, name))
        assert result.returncode == 0, result.stderr


def test_a_file_cut_short_passes_only_when_allowed():
    path = os.path.join(JOB, "rank-3.h1.201.json")
    refused = run_checker(path)
    assert refused.returncode == 1 and "--allow-cut-short" in refused.stderr
    assert run_checker("--allow-cut-short", "--tutti", path).returncode == 0
    # Its all_reduce #42 has no E: one pair per operation says so even then.
    strict = run_checker("--allow-cut-short", "--one-pair-per-operation", path)
    assert strict.returncode == 1 and "this B is never closed" in strict.stderr and "line 10" in strict.stderr


BROKEN = [
    ([{"ph": "Q", "pid": 0, "tid": 0, "ts": 1, "name": "x"}], '"ph" must be one of'),
    ([{"ph": "B", "pid": 0, "tid": 1, "ts": 1}, E(2)], 'needs a string "name"'),
    ([{"ph": "X", "pid": "0", "tid": 0, "ts": 1, "dur": 1, "name": "GET"}], '"pid" must be an integer'),
    ([{"ph": "X", "pid": 0, "tid": 0.5, "ts": 1, "dur": 1, "name": "GET"}], '"tid" must be an integer'),
    ([{"ph": "X", "pid": 0, "tid": 0, "name": "GET", "dur": 1}], '"ts" must be a finite number'),
    ([{"ph": "X", "pid": 0, "tid": 0, "ts": 1, "dur": -1, "name": "GET"}], '"dur" >= 0'),
    ([{"ph": "i", "pid": 0, "tid": 0, "ts": 1, "name": "lost"}], '"s" in g, p, t'),
    ([{"ph": "b", "pid": 0, "tid": 1, "ts": 1, "name": "irecv", "cat": "p2p"}], 'needs an "id"'),
    ([{"ph": "b", "pid": 0, "tid": 1, "ts": 1, "name": "irecv", "id": 7}], 'needs a "cat"'),
    ([{"ph": "X", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "name": "GET", "args": [1]}], '"args" must be an object'),
    ([E(1)], "this E closes nothing"),
    ([B(1)], "this B is never closed"),
    ([B(5), B(3), E(6), E(7)], "ts goes back within a nest"),
    ([B(5), E(3)], "ts goes back within a nest"),
    ([{"ph": "e", "pid": 0, "tid": 1, "ts": 1, "id": "0x7", "cat": "p2p"}], "this e closes nothing"),
    ([{"ph": "b", "pid": 0, "tid": 1, "ts": 1, "id": "0x7", "name": "irecv", "cat": "p2p"}], "this b is never closed"),
]


@pytest.mark.parametrize("events,message", BROKEN)
def test_each_broken_rule_is_named(tmp_path, events, message):
    result = run_checker(write_trace(tmp_path, events))
    assert result.returncode == 1, f"passed: {events}"
    assert message in result.stderr
    assert "event " in result.stderr  # which one


def test_nesting_is_per_track(tmp_path):
    events = [B(1, tid=1), B(2, tid=2), E(3, tid=1), E(4, tid=2)]
    assert run_checker(write_trace(tmp_path, events)).returncode == 0


def test_the_top_level(tmp_path):
    path = tmp_path / "array.json"
    path.write_text("[]")
    assert "the JSON object format" in run_checker(str(path)).stderr
    result = run_checker(write_trace(tmp_path, [], displayTimeUnit="s"))
    assert result.returncode == 1 and '"displayTimeUnit" must be' in result.stderr
    path.write_text('{"traceEvents": [')
    assert "not valid JSON" in run_checker(str(path)).stderr


def test_one_pair_per_operation(tmp_path):
    wrong_name = [B(1), E(2, name="broadcast")]
    assert run_checker(write_trace(tmp_path, wrong_name)).returncode == 0
    result = run_checker("--one-pair-per-operation", write_trace(tmp_path, wrong_name))
    assert result.returncode == 1 and "names itself 'broadcast'" in result.stderr
    no_status = [B(1), {"ph": "E", "pid": 0, "tid": 1, "ts": 2}]
    result = run_checker("--one-pair-per-operation", write_trace(tmp_path, no_status))
    assert result.returncode == 1 and "needs args.status" in result.stderr
    reopened = [{"ph": "b", "pid": 0, "tid": 1, "ts": t, "id": 7, "name": "irecv", "cat": "p2p"} for t in (1, 2)]
    reopened.append({"ph": "e", "pid": 0, "tid": 1, "ts": 3, "id": 7, "cat": "p2p", "args": {"status": "OK"}})
    result = run_checker("--one-pair-per-operation", write_trace(tmp_path, reopened))
    assert result.returncode == 1 and "opened again while open" in result.stderr


def test_tutti_rules(tmp_path):
    bad_cat = [{"ph": "X", "pid": 0, "tid": 0, "ts": 1, "dur": 1, "name": "GET", "cat": "network"}]
    assert run_checker(write_trace(tmp_path, bad_cat)).returncode == 0
    result = run_checker("--tutti", write_trace(tmp_path, bad_cat))
    assert result.returncode == 1 and '"cat" must be one of' in result.stderr
    no_error = [B(1), E(2, status="TIMEOUT")]
    result = run_checker("--tutti", write_trace(tmp_path, no_error))
    assert result.returncode == 1 and "needs args.error" in result.stderr
    wrong_pid = [{"ph": "M", "pid": 1, "tid": 0, "name": "tutti_epoch", "args": {"epoch_us": 1, "rank": 2}}]
    result = run_checker("--tutti", write_trace(tmp_path, wrong_pid))
    assert result.returncode == 1 and "pid must be the rank (2)" in result.stderr
