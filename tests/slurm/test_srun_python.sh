#!/bin/bash
# A Python script under srun (`srun -n N python3 script.py`), through tutti's Python
# package from the build tree: its place from Slurm, an all_reduce checked, on one and
# on two emulated nodes.
. "$(dirname "$0")/lib.sh"
export PYTHONPATH="$TUTTI_BIN_DIR/../python"

srun_ok -N 1 -n 3 /usr/bin/python3 "$SCRIPTS/place.py"
expect_count 3 "^place rank [0-2] of 3 local [0-2] of 3 node 0 sum 6$"
for rank in 0 1 2; do expect_count 1 "^place rank $rank of 3 local $rank of 3 node 0 "; done

srun_ok -N 2 --ntasks-per-node=2 /usr/bin/python3 "$SCRIPTS/place.py"
expect_count 4 "^place rank [0-3] of 4 local [01] of 2 node [01] sum 10$"
for rank in 0 1; do expect_count 1 "^place rank $rank of 4 local $rank of 2 node 0 "; done
for rank in 2 3; do expect_count 1 "^place rank $rank of 4 local $((rank - 2)) of 2 node 1 "; done
echo "PASS"
