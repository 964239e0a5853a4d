#!/bin/bash
# A failing rank ends the job, and tutti's message names it: under srun -K, a rank
# whose script raises an error (Slurm then stops the others); without -K, a rank that
# is killed while the others wait for it in a collective (tutti's failure detector then
# fails their all_reduce, naming it). Either way srun must exit nonzero, well within
# its bound.
. "$(dirname "$0")/lib.sh"

# Ranks 0 and 1 on n1, ranks 2 and 3 on n2.
layout=(-N 2 --ntasks-per-node=2)
bounded 120 srun --time=2 -K "${layout[@]}" "$TUTTI_BIN" "$SCRIPTS/fail.lua" error 2
[ "$status" -ne 0 ] || fail "srun exited 0 although rank 2 failed"
expect "^tutti: rank 2 of 4: .*fail.lua:[0-9]+: rank 2 fails on purpose"
expect "srun: error: n2: tasks? [0-9-]*2[0-9-]*: Exited with exit code 1"

bounded 120 srun --time=2 "${layout[@]}" "$TUTTI_BIN" "$SCRIPTS/fail.lua" kill 1
[ "$status" -ne 0 ] || fail "srun exited 0 although rank 1 was killed"
expect "srun: error: n1: task 1: Killed"
# Every survivor's all_reduce fails naming the lost rank.
expect_count 3 "^tutti: rank [023] of 4: .*rank 1 .*lost"
echo "PASS"
