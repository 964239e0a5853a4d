#!/bin/bash
# srun --mpi=pmix and --mpi=pmi2 (both plugins are in Debian's slurm-wlm-basic-plugins):
# the same script, the same results. Under pmix the rendezvous address travels through
# PMIx; under pmi2 tutti reads Slurm's variables as without --mpi.
. "$(dirname "$0")/lib.sh"

for mpi in pmix pmi2; do
  srun_ok --mpi="$mpi" -N 2 --ntasks-per-node=2 "$TUTTI_BIN" "$SCRIPTS/place.lua"
  expect_count 4 "^place rank [0-3] of 4 local [01] of 2 node [01] sum 10 "
done
# Under PMIx, tutti says where it found the store.
TUTTI_LOG_LEVEL=info srun_ok --mpi=pmix -N 2 -n 2 "$TUTTI_BIN" "$SCRIPTS/place.lua"
expect "rendezvous address from PMIx"
expect_count 2 "^place rank [01] of 2 .* sum 3 "
echo "PASS"
