#!/bin/bash
# TUTTI_TRACE under srun: 4 tasks on two emulated nodes write one trace each into the
# folder they share, and `tutti trace merge` makes one timeline of them. Every file
# and the timeline are valid by the Chrome trace format's rules
# (tests/observe/check_chrome_trace.py), with one begin/end pair per operation, and the
# timeline holds each rank's collectives, with every receive ending after its send
# began across the two nodes' clocks.
. "$(dirname "$0")/lib.sh"

trace="$TUTTI_TEST_DIR/trace"
TUTTI_TRACE="$trace" TUTTI_CHECK=1 TUTTI_SECRET=5ec2e75ec2e75ec2 \
  srun_ok -N 2 -n 4 "$TUTTI_BIN" "$TUTTI_SOURCE_DIR/tests/observe/scripts/traced.lua"
expect_count 4 "^collectives world 11 split [12]$"
files=$(find "$trace" -name 'rank-*.json' | wc -l)
[ "$files" -eq 4 ] || fail "expected 4 trace files in $trace, found $files"

bounded 60 "$TUTTI_BIN" trace merge "$trace"
[ "$status" -eq 0 ] || fail "tutti trace merge exited with $status"
expect "^merged 4 trace files \(0 cut short\) into $trace/timeline.json$"
python3 "$TUTTI_SOURCE_DIR/tests/observe/check_chrome_trace.py" --quiet --tutti --one-pair-per-operation \
  "$trace"/rank-*.json "$trace/timeline.json" || fail "a trace breaks the format's rules (above)"

python3 - "$trace/timeline.json" <<'PY' || fail "the merged timeline is not what the job did (above)"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
for rank in range(4):
    begun = sum(1 for e in events if e["pid"] == rank and e["ph"] == "B" and e.get("cat") == "collective")
    assert begun >= 12, f"rank {rank} has {begun} collectives in the timeline"
opened, sends, receives = {}, {}, {}
for e in events:
    if e.get("cat") != "p2p":
        continue
    if e["ph"] == "b":
        opened[(e["pid"], e["id"])] = e
        continue
    b = opened[(e["pid"], e["id"])]
    peer, tag = b["args"]["peer"], b["args"]["tag"]
    if b["name"] == "send":
        sends[(e["pid"], peer, tag)] = b["ts"]
    else:
        receives[(peer, e["pid"], tag)] = e["ts"]
assert sends and sends.keys() == receives.keys(), (sends, receives)
for key, sent in sends.items():
    assert receives[key] >= sent, f"the receive of {key} ends at {receives[key]} before its send begins at {sent}"
PY
echo "PASS"
