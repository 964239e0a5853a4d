#!/usr/bin/env python3
"""Checks that a file is a valid Chrome trace (JSON object format), by the format's rules
rather than by parsing alone, and, optionally, by the rules of tutti's trace files
(docs/trace.md).

    python3 tests/observe/check_chrome_trace.py [OPTIONS] FILE...

Exit status 0 when every file passes; 1 with one line per problem on stderr, each naming
the file, the event's index in traceEvents (and its line where the file has one event per
line) and the event itself; 2 for bad arguments.

Always checked:
  - the top level is an object with a "traceEvents" list; "displayTimeUnit", where
    present, is "ms" or "ns"; "otherData", where present, an object;
  - every event is an object whose "ph" is a known phase; "name" is a string (required
    except for E and e); "pid" and "tid" are integers; "ts" is a finite number (except
    for M); "args", where present, is an object; "cat", where present, a string;
  - X has "dur" >= 0; i has "s" in g, p, t; b, n and e have "id" and "cat";
  - B and E nest per (pid, tid): an E closes the last open B of its track, and within a
    nest ts never goes back; every B is closed by the end;
  - b and e pair up by (pid, cat, id): every e closes an open b, and every b is closed.

Options:
  --allow-cut-short  accept a trace whose writer died (a per-rank file of a crashed
                     process): the closing line and a partial last line may be missing,
                     and B and b may be left open at the end.
  --one-pair-per-operation  also: each B/E and b/e pair is one operation: every B has its
                     E (even with --allow-cut-short), an E or e that names itself names
                     its B or b, a b's id is not opened again while open, and every E
                     and e carries args.status (as tutti's writer puts it).
  --tutti            also the rules of tutti's files: cat is one of collective, p2p,
                     wait, control, store, health; a status is "OK" or an upper-case
                     status name, and a failed one comes with args.error; pid is the
                     rank of the tutti_epoch metadata, where there is one.
  --quiet            print nothing when a file passes.

Used by the tests of `tutti trace` (tests/observe) and of the runtime's trace writer.
"""
import argparse
import json
import math
import re
import sys

PHASES = set("BEXiICbneMstfPONDRcVv()")
TUTTI_CATEGORIES = {"collective", "p2p", "wait", "control", "store", "health"}
STATUS_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
OPENING = '{"traceEvents":['


class Problems:
    def __init__(self, path, lines):
        self.path, self.lines, self.found = path, lines, []

    def add(self, index, event, message):
        where = f"event {index}"
        if self.lines is not None and index < len(self.lines):
            where += f" (line {self.lines[index]})"
        text = json.dumps(event, separators=(",", ":")) if event is not None else ""
        if len(text) > 200:
            text = text[:200] + "..."
        self.found.append(f"{self.path}: {where}: {message}: {text}")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load(path, allow_cut_short):
    """Returns (document, line of each event or None, whether cut short)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        if not allow_cut_short:
            raise ValueError(f"not valid JSON ({error}); a file whose writer died passes only with --allow-cut-short")
        if not lines or lines[0].strip() != OPENING:
            raise ValueError(f"not valid JSON ({error}), and its first line is not {OPENING}")
        events, event_lines = [], []
        body = [(number, line.strip()) for number, line in enumerate(lines[1:], start=2) if line.strip()]
        for position, (number, line) in enumerate(body):
            if line.startswith("]"):
                raise ValueError(f"line {number}: the closing line is in place but the file is not valid JSON ({error})")
            try:
                event = json.loads(line[1:] if line.startswith(",") else line)
            except json.JSONDecodeError:
                if position == len(body) - 1:
                    break  # the partial last line of a writer that died
                raise ValueError(f"line {number} is not one JSON event, and only the last line may be cut off")
            events.append(event)
            event_lines.append(number)
        return {"traceEvents": events}, event_lines, True
    event_lines = None
    if isinstance(document, dict) and lines and lines[0].strip() == OPENING:
        # One event per line: name lines in messages.
        numbered = [n for n, line in enumerate(lines[1:], start=2) if line.strip().lstrip(",").startswith("{")]
        if len(numbered) == len(document.get("traceEvents", [])):
            event_lines = numbered
    return document, event_lines, False


def check_fields(index, event, problems, options):
    if not isinstance(event, dict):
        problems.add(index, event, "an event must be an object")
        return False
    ph = event.get("ph")
    if not isinstance(ph, str) or ph not in PHASES:
        problems.add(index, event, f'"ph" must be one of {"".join(sorted(PHASES))}, not {ph!r}')
        return False
    if ph not in "Ee" and not isinstance(event.get("name"), str):
        problems.add(index, event, f'a {ph} event needs a string "name"')
    if "name" in event and not isinstance(event["name"], str):
        problems.add(index, event, '"name" must be a string')
    for key in ("pid", "tid"):
        if not is_int(event.get(key)):
            problems.add(index, event, f'"{key}" must be an integer')
    if ph != "M" and not is_number(event.get("ts")):
        problems.add(index, event, '"ts" must be a finite number')
    if "args" in event and not isinstance(event["args"], dict):
        problems.add(index, event, '"args" must be an object')
    if "cat" in event and not isinstance(event["cat"], str):
        problems.add(index, event, '"cat" must be a string')
    if ph == "X" and not (is_number(event.get("dur")) and event["dur"] >= 0):
        problems.add(index, event, 'an X event needs "dur" >= 0')
    if ph == "i" and event.get("s") not in ("g", "p", "t"):
        problems.add(index, event, 'an i event needs "s" in g, p, t')
    if ph in "bne":
        if not (isinstance(event.get("id"), str) or is_int(event.get("id"))):
            problems.add(index, event, f'a {ph} event needs an "id" (a string or an integer)')
        if not isinstance(event.get("cat"), str):
            problems.add(index, event, f'a {ph} event needs a "cat"')
    if options.tutti:
        check_tutti_fields(index, event, problems)
    return True


def check_tutti_fields(index, event, problems):
    if "cat" in event and event["cat"] not in TUTTI_CATEGORIES:
        problems.add(index, event, f'"cat" must be one of {", ".join(sorted(TUTTI_CATEGORIES))}')
    args = event.get("args")
    if event["ph"] in "Ee" and isinstance(args, dict) and "status" in args:
        status = args["status"]
        if not (isinstance(status, str) and STATUS_NAME.match(status)):
            problems.add(index, event, 'args.status must be "OK" or an upper-case status name')
        elif status not in ("OK", "UNFINISHED") and not isinstance(args.get("error"), str):
            problems.add(index, event, f"a failed operation ({status}) needs args.error, the message")


def check_pairs(events, problems, options, cut_short):
    nests = {}    # (pid, tid) -> [(index, event)] of open B events
    last_ts = {}  # (pid, tid) -> ts of the last B or E while a nest is open
    pending = {}  # (pid, cat, id) -> (index, event) of an open b
    for index, event in events:
        ph, ts = event["ph"], event.get("ts")
        if ph in "BE":
            track = (event.get("pid"), event.get("tid"))
            nest = nests.setdefault(track, [])
            if nest and is_number(ts) and is_number(last_ts.get(track)) and ts < last_ts[track]:
                problems.add(index, event, f"ts goes back within a nest on pid {track[0]} tid {track[1]} "
                                           f"({ts} after {last_ts[track]})")
            if ph == "B":
                nest.append((index, event))
            elif not nest:
                problems.add(index, event, f"this E closes nothing: no B is open on pid {track[0]} tid {track[1]}")
            else:
                opened_at, opened = nest.pop()
                check_same_operation(index, event, opened_at, opened, problems, options)
            last_ts[track] = ts if nest else None
        elif ph in "be":
            key = (event.get("pid"), event.get("cat"), json.dumps(event.get("id")))
            if ph == "b":
                if key in pending and options.one_pair_per_operation:
                    problems.add(index, event, f"id {event.get('id')} is opened again while open (event {pending[key][0]})")
                pending[key] = (index, event)
            elif key not in pending:
                problems.add(index, event, f"this e closes nothing: no b with pid {key[0]}, cat {key[1]!r}, "
                                           f"id {event.get('id')} is open")
            else:
                opened_at, opened = pending.pop(key)
                check_same_operation(index, event, opened_at, opened, problems, options)
    may_stay_open = cut_short and options.allow_cut_short and not options.one_pair_per_operation
    if not may_stay_open:
        for nest in nests.values():
            for index, event in nest:
                problems.add(index, event, "this B is never closed by an E on its track")
        for index, event in pending.values():
            problems.add(index, event, "this b is never closed by an e")


def check_same_operation(index, closing, opened_at, opening, problems, options):
    if is_number(closing.get("ts")) and is_number(opening.get("ts")) and closing["ts"] < opening["ts"]:
        problems.add(index, closing, f"ends before it began (event {opened_at} at ts {opening['ts']})")
    if not options.one_pair_per_operation:
        return
    if "name" in closing and closing["name"] != opening.get("name"):
        problems.add(index, closing, f"closes {opening.get('name')!r} (event {opened_at}) but names itself "
                                     f"{closing['name']!r}")
    if not isinstance(closing.get("args"), dict) or "status" not in closing["args"]:
        problems.add(index, closing, "the end of an operation needs args.status")


def check_ranks(events, problems):
    epochs = [(i, e) for i, e in events if e.get("ph") == "M" and e.get("name") == "tutti_epoch"]
    for index, event in epochs:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if not is_int(args.get("epoch_us")):
            problems.add(index, event, "tutti_epoch needs args.epoch_us, an integer")
        if "rank" in args and args["rank"] != event.get("pid"):
            problems.add(index, event, f"pid must be the rank ({args['rank']})")


def check(path, options):
    try:
        document, lines, cut_short = load(path, options.allow_cut_short)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return [f"{path}: {error}"]
    problems = Problems(path, lines)
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        return [f'{path}: the top level must be an object with a "traceEvents" list (the JSON object format)']
    if "displayTimeUnit" in document and document["displayTimeUnit"] not in ("ms", "ns"):
        problems.found.append(f'{path}: "displayTimeUnit" must be "ms" or "ns"')
    if "otherData" in document and not isinstance(document["otherData"], dict):
        problems.found.append(f'{path}: "otherData" must be an object')
    events = [(i, e) for i, e in enumerate(document["traceEvents"]) if check_fields(i, e, problems, options)]
    check_pairs(events, problems, options, cut_short)
    if options.tutti:
        check_ranks(events, problems)
    return problems.found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--allow-cut-short", action="store_true")
    parser.add_argument("--one-pair-per-operation", action="store_true")
    parser.add_argument("--tutti", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    options = parser.parse_args()
    failed = False
    for path in options.files:
        found = check(path, options)
        for line in found[:50]:
            print(line, file=sys.stderr)
        if len(found) > 50:
            print(f"{path}: ... and {len(found) - 50} more problems", file=sys.stderr)
        failed = failed or bool(found)
        if not found and not options.quiet:
            print(f"{path}: a valid Chrome trace")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
