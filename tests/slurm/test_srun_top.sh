#!/bin/bash
# tutti top on a job started by srun: 4 tasks on two emulated nodes, rank 2 held in a
# computation (tests/observe/scripts/held.lua). `tutti top --slurm JOB --once`, run
# beside the step as its user would, finds the step's store as the ranks found it (the
# step's first node, the port derived from the ids), and shows the 4 ranks and who
# waits for whom. A wrong secret, a job that is not running and a malformed id are one
# line each and exit status 1 (2 for the id). The job is then released and ends well.
. "$(dirname "$0")/lib.sh"

export TUTTI_SECRET=70b70b70b70b70b7
release="$TUTTI_TEST_DIR/release"
release2="$TUTTI_TEST_DIR/release2"
TUTTI_TEST_RELEASE=$release TUTTI_TEST_RELEASE2=$release2 timeout -k 5 120 srun --time=2 -N 2 -n 4 \
  "$TUTTI_BIN" "$TUTTI_SOURCE_DIR/tests/observe/scripts/held.lua" >"$TUTTI_TEST_DIR/job" 2>&1 &
srun_pid=$!
# Whatever happens, the held ranks are let go and the srun this test started ends.
trap 'touch "$release" "$release2"; kill "$srun_pid" 2>/dev/null || true' EXIT

job=""
for _ in $(seq 300); do
  job=$(squeue -h -t RUNNING -o %i | head -1)
  if [ -n "$job" ]; then
    status=0
    timeout -k 5 30 "$TUTTI_BIN" top --slurm "$job" --once >"$TUTTI_TEST_DIR/out" 2>&1 || status=$?
    # all_reduce #2's wait, where rank 2 is held: in #1 the others may wait for a rank 2
    # that has not reached it yet (CI, 2026-11-28: "idle, before any collective").
    if [ "$status" -eq 0 ] && grep -q "all_reduce #2: ranks 0, 1, 3 wait for rank 2" "$TUTTI_TEST_DIR/out"; then break; fi
  fi
  sleep 0.1
done
cat "$TUTTI_TEST_DIR/out" >&2
[ -n "$job" ] || fail "the srun job never ran: $(cat "$TUTTI_TEST_DIR/job")"
expect "^Slurm step $job\.0 on n\[1-2\] \(store [^ ]+:[0-9]+\)"
expect "^waiting: all_reduce #2: ranks 0, 1, 3 wait for rank 2 \(rank 2 is idle after all_reduce #1 for "
expect_count 4 "^ +[0-3]  [^ ]+:[0-9]+ +(in all_reduce #2|idle after all_reduce #1) "

TUTTI_SECRET=0ther0ther0ther0 bounded 30 "$TUTTI_BIN" top --slurm "$job" --once
[ "$status" -eq 1 ] || fail "a wrong secret: exit status $status, not 1"
expect "^tutti top: the job's store at [^ ]+ turned us away: .*set TUTTI_SECRET to the job's"

bounded 30 "$TUTTI_BIN" top --slurm 999999 --once
[ "$status" -eq 1 ] || fail "a job that does not run: exit status $status, not 1"
expect_count 1 "^tutti top: cannot find the store of Slurm step 999999: .*scontrol"

bounded 30 "$TUTTI_BIN" top --slurm "$job.x" --once
[ "$status" -eq 2 ] || fail "a malformed step id: exit status $status, not 2"
expect "^tutti top: --slurm needs JOB or JOB.STEP"

touch "$release" "$release2"
status=0
wait "$srun_pid" || status=$?
cp "$TUTTI_TEST_DIR/job" "$TUTTI_TEST_DIR/out"
cat "$TUTTI_TEST_DIR/out" >&2
[ "$status" -eq 0 ] || fail "the released job exited with $status"
expect_count 4 "^done 16(\.0)?$"
echo "PASS"
