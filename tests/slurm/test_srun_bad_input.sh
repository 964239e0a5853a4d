#!/bin/bash
# Under a real srun, a step whose variables were tampered with: every rank must stop at
# once with a message naming the variables it read and what to set, never wait.
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
echo "PASS"
