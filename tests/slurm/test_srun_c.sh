#!/bin/bash
# A C program under srun (examples/c/01_hello, which prints every rank's place), and
# how ranks talk: those of one emulated node through a shared-memory segment, those of
# two emulated nodes over UCX. Emulated nodes share this machine's hostname and
# /dev/shm, so only Slurm's node ids tell them apart.
. "$(dirname "$0")/lib.sh"
hello="$TUTTI_BIN_DIR/01_hello"

srun_ok -N 2 --ntasks-per-node=2 "$hello"
expect_count 4 "^rank [0-3] of 4 \(local rank [01] of 2 on node [01]\)"
expect_count 1 "^rank 0 of 4 \(local rank 0 of 2 on node 0\): in the even group as rank 1 of 2$"
expect_count 1 "^rank 1 of 4 \(local rank 1 of 2 on node 0\): in the odd group as rank 1 of 2$"
expect_count 1 "^rank 2 of 4 \(local rank 0 of 2 on node 1\): in the even group as rank 0 of 2$"
expect_count 1 "^rank 3 of 4 \(local rank 1 of 2 on node 1\): in the odd group as rank 0 of 2$"

# TUTTI_LOG_LEVEL=info makes each rank say how its collectives travel.
TUTTI_LOG_LEVEL=info srun_ok -N 1 -n 3 "$hello"
expect_count 3 "comm \"world\" \(rank [0-2] of 3\): point-to-point over .*, collectives through shared memory"
TUTTI_LOG_LEVEL=info srun_ok -N 2 -n 4 "$hello"
expect_count 4 "comm \"world\" \(rank [0-3] of 4\): point-to-point over .*, collectives over point-to-point"
echo "PASS"
