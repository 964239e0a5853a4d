#!/bin/bash
# Two steps of one job, and two jobs, at once on the same two nodes: each must meet at
# a store of its own (the port is derived from the job and step ids), so both finish
# with their own world's sum.
. "$(dirname "$0")/lib.sh"

# Two steps of one allocation, side by side (--overlap: they share its CPUs).
steps='
  srun --overlap -N 2 -n 4 "$0" "$1" > "$2/step_a" 2>&1 & a=$!
  srun --overlap -N 2 -n 3 "$0" "$1" > "$2/step_b" 2>&1 & b=$!
  wait $a && wait $b'
bounded 120 salloc --time=2 -N 2 -n 8 bash -c "$steps" "$TUTTI_BIN" "$SCRIPTS/place.lua" "$TUTTI_TEST_DIR"
cat "$TUTTI_TEST_DIR/step_a" "$TUTTI_TEST_DIR/step_b" >&2
[ "$status" -eq 0 ] || fail "the two steps did not both succeed (salloc exited with $status)"
cp "$TUTTI_TEST_DIR/step_a" "$TUTTI_TEST_DIR/out" && expect_count 4 "^place rank [0-3] of 4 .* sum 10 "
cp "$TUTTI_TEST_DIR/step_b" "$TUTTI_TEST_DIR/out" && expect_count 3 "^place rank [0-2] of 3 .* sum 6 "

# Two jobs, side by side.
jobs='
  srun --time=2 -N 2 -n 4 "$0" "$1" > "$2/job_a" 2>&1 & a=$!
  srun --time=2 -N 2 -n 2 "$0" "$1" > "$2/job_b" 2>&1 & b=$!
  wait $a && wait $b'
bounded 120 bash -c "$jobs" "$TUTTI_BIN" "$SCRIPTS/place.lua" "$TUTTI_TEST_DIR"
cat "$TUTTI_TEST_DIR/job_a" "$TUTTI_TEST_DIR/job_b" >&2
[ "$status" -eq 0 ] || fail "the two jobs did not both succeed"
cp "$TUTTI_TEST_DIR/job_a" "$TUTTI_TEST_DIR/out" && expect_count 4 "^place rank [0-3] of 4 .* sum 10 "
cp "$TUTTI_TEST_DIR/job_b" "$TUTTI_TEST_DIR/out" && expect_count 2 "^place rank [01] of 2 .* sum 3 "
echo "PASS"
