#!/bin/bash
# Under a real srun, a step whose variables were tampered with: every rank must stop at
# once with a message naming the variables it read and what to set, never wait; and a
# rank started without the job's secret.
. "$(dirname "$0")/lib.sh"

# expect_refusal PATTERN VAR=VALUE...: srun -n 2 of place.lua with those variables
# overridden fails, and every rank says PATTERN.
expect_refusal() {
  local pattern=$1
  shift
  bounded 120 srun --time=2 -N 1 -n 2 env "$@" "$TUTTI_BIN" "$SCRIPTS/place.lua"
  [ "$status" -ne 0 ] || fail "srun exited 0 with $*"
  expect_count 2 "$pattern"
}

expect_refusal "Slurm environment is contradictory: SLURM_PROCID=5 is not below SLURM_NTASKS=2 \(read SLURM_PROCID=5, SLURM_NTASKS=2, .*\); check the srun command, or set TUTTI_RANK and TUTTI_WORLD_SIZE" \
  SLURM_PROCID=5
expect_refusal "Slurm environment is not valid: SLURM_STEP_NODELIST cannot be read: .*unbalanced '\['.*; check the srun command, or set TUTTI_ADDR" \
  "SLURM_STEP_NODELIST=n[1-"
expect_refusal "Slurm environment is incomplete: SLURM_PROCID is set but SLURM_NTASKS is not" \
  -u SLURM_NTASKS

# A rank without the job's secret: the store denies it, and once no rank has arrived
# for 5 s rank 0 ends the meeting on the others, naming it and the denial, instead of
# their waiting out the 30 s init timeout this file sets.
TUTTI_SECRET=j0bj0bj0bj0bj0b1 bounded 120 srun --time=2 -N 2 -n 3 bash -c \
  'if [ "$SLURM_PROCID" = 2 ]; then export TUTTI_SECRET=n0t-the-j0b-secret; fi; exec "$0" "$1"' \
  "$TUTTI_BIN" "$SCRIPTS/place.lua"
[ "$status" -ne 0 ] || fail "srun exited 0 with a rank denied"
expect_count 2 "TUTTI_ERR_DENIED: tutti\.world: rank 0 gave up at the rendezvous .*: rank 2 never arrived \(2 of 3 came\), and none has come for [0-9.]+ s; the store denied the connection from "
expect_count 1 "TUTTI_ERR_DENIED: tutti\.world: rank 2 cannot reach the rendezvous store"
echo "PASS"
