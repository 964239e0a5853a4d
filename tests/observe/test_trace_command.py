"""`tutti trace merge`, `show` and the errors of every subcommand, through the tutti
binary (TUTTI_BIN), on the crafted job of tests/observe/data/job: four ranks with clock
offsets, rank 3 cut short inside all_reduce #42.

The drawing is compared with data/show_job.txt; after a deliberate change of the
drawing, TUTTI_UPDATE_GOLDEN=1 rewrites that file (review its diff)."""
import json
import os
import pty
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "data", "job")
GOLDEN = os.path.join(HERE, "data", "show_job.txt")
CHECKER = os.path.join(HERE, "check_chrome_trace.py")
TUTTI = os.environ.get("TUTTI_BIN", "tutti")
UNFINISHED_LINE = "rank 3's trace ends at 4 ms: the process did not exit cleanly; 1 operation left open: all_reduce #42"


def tutti(*args, **environment):
    env = dict(os.environ, NO_COLOR="1", **environment)
    return subprocess.run([TUTTI, "trace", *args], capture_output=True, text=True, timeout=30, env=env)


@pytest.fixture
def job(tmp_path):
    folder = tmp_path / "job"
    shutil.copytree(JOB, folder)
    return folder


@pytest.fixture
def timeline(job):
    result = tutti("merge", str(job))
    assert result.returncode == 0, result.stderr
    return job / "timeline.json"


def timed_events(path):
    return [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] != "M"]


def test_merge_writes_a_valid_trace_and_names_the_file_cut_short(job):
    result = tutti("merge", str(job))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [UNFINISHED_LINE,
                                          f"merged 4 trace files (1 cut short) into {job / 'timeline.json'}"]
    check = subprocess.run([sys.executable, CHECKER, "--tutti", "--one-pair-per-operation", str(job / "timeline.json")],
                           capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr


def test_merge_aligns_clocks_sorts_and_closes(timeline):
    events = timed_events(timeline)
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    assert events[0]["ts"] == 0  # rank 0's first store GET, the job's first event

    def first(rank, tid, phase, seq=None):
        return next(e for e in events if e["pid"] == rank and e["tid"] == tid and e["ph"] == phase and
                    (seq is None or e["args"].get("seq") == seq))
    # epoch + best offset + ts - the job's start (rank 0's epoch + 10); the best offset
    # moved toward zero by half its round trip: rank 1's -500 over 30 us, rank 3's
    # 250.25 over 15 us
    assert first(1, 1, "B", 41)["ts"] == 1000 - 485 + 0 - 10
    assert first(2, 2, "B", 1)["ts"] == 2000 + 0 + 2700 - 10
    assert first(3, 1, "B", 42)["ts"] == 3000 + 242.75 + 300 - 10
    closing = [e for e in events if e["pid"] == 3 and e["ph"] == "E"][-1]
    assert closing["args"] == {"status": "UNFINISHED"} and closing["ts"] == 3532.75
    ranks = json.loads(timeline.read_text())["otherData"]["tutti"]["ranks"]
    assert [(r["rank"], r["host"], r["pid"], r["offset_us"], r["cut_short"], r["events"]) for r in ranks] == [
        (0, "h0", 100, 0.0, False, 18), (1, "h0", 101, -485.0, False, 16), (2, "h1", 200, 0.0, False, 17),
        (3, "h1", 201, 242.75, True, 9)]


def test_merge_output_option_and_the_files_it_skips(job, tmp_path):
    (job / "notes.json").write_text("not a trace")
    (job / "timeline.json").write_text("an earlier merge")
    out = tmp_path / "elsewhere.json"
    result = tutti("merge", str(job), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert len(timed_events(out)) > 0 and (job / "timeline.json").read_text() == "an earlier merge"


def test_show_draws_the_golden_timeline(timeline):
    result = tutti("show", str(timeline), "--width", "100")
    assert result.returncode == 0, result.stderr
    if os.environ.get("TUTTI_UPDATE_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(result.stdout)
    with open(GOLDEN) as f:
        golden = f.read()
    assert result.stdout == golden, f"the drawing differs from {GOLDEN}:\n{result.stdout}"
    assert "\x1b[" not in result.stdout
    lines = result.stdout.splitlines()
    assert any(line.startswith("rank 2 split 1 of world") for line in lines)
    assert any(line.startswith("legend:") and "A all_reduce" in line and "B broadcast" in line for line in lines)
    assert any("rank 2 world: all_reduce #42 TIMEOUT: all_reduce #42 on comm" in line for line in lines)
    assert any("rank 3 world: all_reduce #42 UNFINISHED" in line for line in lines)
    assert any("rank 0 control: rank 3 lost (why=no heartbeat for 2 s)" in line for line in lines)
    assert any(line.startswith("  rank 0: all_reduce 2 x 3.700 ms") for line in lines)
    assert all(len(line) <= 100 for line in lines[:13])


def test_show_selects_ranks_and_time(timeline):
    result = tutti("show", str(timeline), "--width", "80", "--ranks", "0,2-3", "--from", "3.5", "--to=4")
    assert result.returncode == 0, result.stderr
    rows = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("rank ")]
    assert sorted(set(rows)) == ["0", "2", "3"]
    assert result.stdout.startswith("3 ranks, 3.500 to 4.000 ms")
    assert "all_reduce #42 TIMEOUT" in result.stdout and "rank 1" not in result.stdout


def test_show_merges_one_rank_file_alone():
    result = tutti("show", os.path.join(JOB, "rank-3.h1.201.json"), "--width", "60")
    assert result.returncode == 0, result.stderr
    assert "rank 3 world: all_reduce #42 UNFINISHED" in result.stdout
    assert "did not exit cleanly" in result.stderr


def test_show_colours_only_a_terminal_without_no_color(timeline):
    def on_terminal(environment):
        leader, follower = pty.openpty()
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        env.update(environment)
        process = subprocess.Popen([TUTTI, "trace", "show", str(timeline), "--width", "100"], stdout=follower,
                                   stderr=subprocess.DEVNULL, env=env)
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closes with the process
                break
            if not chunk:
                break
            output += chunk
        process.wait(timeout=30)
        os.close(leader)
        return output.decode()
    assert "\x1b[34mAAAA" in on_terminal({})
    assert "\x1b[" not in on_terminal({"NO_COLOR": "1"})


@pytest.mark.parametrize("args,message", [
    ((), "usage: tutti trace merge DIR"),
    (("frobnicate",), 'unknown command "frobnicate"'),
    (("merge",), "which folder?"),
    (("merge", "a", "b"), 'one file or folder, not "a" and "b"'),
    (("merge", "a", "--wide"), 'unknown option "--wide"'),
    (("show", "f.json", "--width"), "--width needs a value"),
    (("show", "f.json", "--width", "ten"), '--width "ten" is not a number in [40, 1000]'),
    (("show", "f.json", "--width", "20"), '--width "20" is not a number in [40, 1000]'),
    (("show", "f.json", "--ranks", "1-"), '--ranks "1-" is not a list of ranks'),
    (("show", "f.json", "--from", "5", "--to", "2"), "--to 2 is not after --from 5"),
])
def test_bad_arguments_exit_2(args, message):
    result = tutti(*args)
    assert result.returncode == 2, result
    assert message in result.stderr


def test_help():
    result = tutti("--help")
    assert result.returncode == 0 and "tutti trace show FILE" in result.stdout and "tutti trace html FILE" in result.stdout
    listing = subprocess.run([TUTTI, "help"], capture_output=True, text=True, timeout=30)
    assert "trace    merge, show or draw trace files" in listing.stdout


def test_unreadable_input_exits_1(tmp_path):
    result = tutti("merge", str(tmp_path / "missing"))
    assert result.returncode == 1 and "cannot read the trace folder" in result.stderr
    result = tutti("merge", str(tmp_path))
    assert result.returncode == 1 and "holds no rank-*.json trace file" in result.stderr
    (tmp_path / "rank-0.h.1.json").write_text('{"traceEvents":[\n{"ph":"M"}\n,garbage\n,{"ph":"E"}\n')
    result = tutti("merge", str(tmp_path))
    assert result.returncode == 1 and "rank-0.h.1.json line 3 is not a JSON event" in result.stderr
    (tmp_path / "rank-0.h.1.json").write_text("<html>not json</html>")
    result = tutti("merge", str(tmp_path))
    assert result.returncode == 1 and "is not a trace file" in result.stderr
    result = tutti("show", str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "cannot read" in result.stderr
    result = tutti("html", str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "cannot read" in result.stderr
