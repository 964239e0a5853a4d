"""Runs every Python example as examples/README.md does (tutti launch -n N -- python3
examples/python/X.py) and checks what it prints: the collectives' matrices against
each other (after = the reduction, block or copy of the befores the ranks printed),
the classifier's reduced loss against the whole batch's, and the training's falling
loss and identical replicas.
"""
import os
import re
import subprocess

import pytest

SOURCE = os.environ["TUTTI_SOURCE_DIR"]
EXAMPLES = os.path.join(SOURCE, "examples", "python")


def launch(example, ranks):
    result = subprocess.run(
        [os.environ["TUTTI_BIN"], "launch", "-n", str(ranks), "--timeout", "200", "--",
         os.environ["TUTTI_PYTHON"], os.path.join(EXAMPLES, example)],
        capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = {}
    for line in result.stdout.splitlines():
        match = re.match(r"\[(\d+)\] (.*)", line)
        assert match, f"untagged line {line!r}"
        lines.setdefault(int(match[1]), []).append(match[2])
    assert sorted(lines) == list(range(ranks))
    return lines


def expect_readme_excerpt(example, lines):
    """The lines examples/README.md quotes for example (the first code block after the
    paragraph that opens with its name, in the Python section) must still be printed."""
    with open(os.path.join(SOURCE, "examples", "README.md")) as readme:
        text = readme.read()
    section = text[text.index("## The Python examples"):]
    section = section[:section.index("\n## ", 1)]
    after = section[section.index(f"\n`{example}`"):]
    block = after.split("```")[1]
    printed = {f"[{r}] {line}" for r, rank_lines in lines.items() for line in rank_lines}
    quoted = [line for line in block.splitlines() if line.startswith("[")]
    assert quoted, f"examples/README.md quotes no output of {example}"
    for line in quoted:
        assert line in printed, f"examples/README.md shows {line!r} for {example}, which it no longer prints"


def matrices(lines):
    """{label: 11x11 list of ints} from one rank's "Rank: r, label." and 11 rows."""
    found = {}
    for i, line in enumerate(lines):
        match = re.match(r"Rank: \d+, (.*)\.$", line)
        if match and i + 11 < len(lines) + 1 and re.fullmatch(r"(\d+ ){10}\d+", lines[i + 1]):
            found[match[1]] = [[int(v) for v in row.split()] for row in lines[i + 1:i + 12]]
    return found


def cellwise_max(ms):
    return [[max(cells) for cells in zip(*rows)] for rows in zip(*ms)]


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_collectives(ranks):
    lines = launch("02_collectives.py", ranks)
    if ranks == 2:
        expect_readme_excerpt("02_collectives.py", lines)
    out = {r: matrices(rank_lines) for r, rank_lines in lines.items()}
    before = {label: [out[r][f"before {label}"] for r in range(ranks)]
              for label in ("all_reduce", "reduce", "broadcast")}
    if ranks == 2:  # the tutorial's picture: rank 1's square over rank 0's disk
        assert out[0]["after all_reduce(max)"][3] == [0, 1, 1, 2, 2, 2, 0, 0, 0, 0, 0]
    for r in range(ranks):
        assert out[r]["after all_reduce(max)"] == cellwise_max(before["all_reduce"])
        assert out[r]["after reduce(max) to rank 0"] == (
            cellwise_max(before["reduce"]) if r == 0 else before["reduce"][r])
        assert out[r]["after broadcast from rank 0"] == before["broadcast"][0]
        for i in range(ranks):
            assert out[r][f"after all_gather, block {i}"] == out[i]["all_gather input"]
        assert out[r]["after reduce_scatter(max)"] == cellwise_max(
            [out[i][f"reduce_scatter input {r}"] for i in range(ranks)])
    assert any(any(row) for row in before["all_reduce"][0])


@pytest.mark.parametrize("ranks", [2, 3])
def test_point_to_point(ranks):
    lines = launch("03_point_to_point.py", ranks)
    for r in range(ranks):
        left = (r - 1) % ranks
        assert f"Rank: {r}, blocking: got [{100 + left}] from rank {left}." in lines[r]
        assert any(re.fullmatch(rf"Rank: {r}, non-blocking: got \[{200 + left}\] from rank {left}, "
                                r"polled \d+ times\.", line) for line in lines[r]), lines[r]
        assert f"Rank: {r}, scatter: received [{2 * r}, {2 * r + 1}]." in lines[r]
    assert f"Rank: 0, gather: {[[r, r + 1, r + 2] for r in range(ranks)]}." in lines[0]


def test_classifier():
    lines = launch("10_classifier.py", 2)
    expect_readme_excerpt("10_classifier.py", lines)
    assert "Rank: 0, data ready." in lines[0]
    for r in (0, 1):
        assert f"Rank: {r}, weights received." in lines[r]
    final = [re.match(r"Rank: 0, Final Loss: (\S+) \(the whole batch of 256 on one rank: (\S+)\)\.$", line)
             for line in lines[0]]
    final = [m for m in final if m]
    assert len(final) == 1 and final[0][1] == final[0][2]
    mine = [float(re.search(r"images: (\S+)\.$", line)[1]) for r in (0, 1) for line in lines[r]
            if "loss of my 128 images" in line]
    assert abs(sum(mine) / 2 - float(final[0][1])) < 1e-3


@pytest.mark.parametrize("ranks", [1, 4])
def test_data_parallel(ranks):
    lines = launch("11_data_parallel.py", ranks)
    if ranks == 4:
        expect_readme_excerpt("11_data_parallel.py", lines)
    for r in range(ranks):
        text = "\n".join(lines[r])
        assert f"Rank: {r}, the model was identical on every rank after each of 402 steps." in text
        assert "weights [ 2.0 -1.0 0.5 3.0 ] bias 1.0" in text
        linear = [float(v) for v in re.findall(r"linear regression, step \d+, loss (\S+)\.", text)]
        mlp = [float(v) for v in re.findall(r"mlp, step \d+, loss (\S+)\.", text)]
        assert len(linear) == 5 and len(mlp) == 5
        assert linear[-1] < linear[0] / 100 and mlp[-1] < mlp[0] / 10
        accuracy = float(re.search(r"mlp, accuracy (\S+)%", text)[1])
        assert accuracy > 95
    # Every rank printed the same numbers: the losses are over all samples.
    assert all(lines[r] == [line.replace("Rank: 0,", f"Rank: {r},") for line in lines[0]]
               for r in range(ranks))
