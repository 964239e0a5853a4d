#!/bin/bash
# `srun tutti script.lua` on one and two emulated nodes, 1 to 8 tasks, with no variable
# set by hand (and once through node relays): every rank must get its rank, the world size, its local rank and size
# and its node index from Slurm, and the all_reduce sum of rank + 1 over the world.
# Slurm's own SLURM_LOCALID and SLURM_NODEID are the truth for the node facts.
. "$(dirname "$0")/lib.sh"

# check_places N: the last srun printed one place line per rank of N, each with the
# right sum, and with local rank, local size and node index as Slurm placed the task.
check_places() {
  local n=$1 sum=$(($1 * ($1 + 1) / 2))
  expect_count "$n" "^place rank [0-9]+ of $n local [0-9]+ of [0-9]+ node [0-9]+ sum $sum slurm "
  local rank
  for ((rank = 0; rank < n; rank++)); do expect_count 1 "^place rank $rank of $n "; done
  # Each line ends with the task's SLURM_LOCALID, SLURM_NODEID and its node's task
  # count from SLURM_STEP_TASKS_PER_NODE, as the script prints them.
  awk '/^place / && ($7 != $15 || $11 != $16 || $9 != $17) { print "wrong place: " $0; bad = 1 } END { exit bad }' \
    "$TUTTI_TEST_DIR/out" || fail "a rank's local rank, local size or node differs from Slurm's"
}

for n in 1 2 4 8; do
  srun_ok -N 1 -n "$n" "$TUTTI_BIN" "$SCRIPTS/place.lua"
  check_places "$n"
  expect_count "$n" "node 0 sum"
done
for n in 2 3 5 8; do
  srun_ok -N 2 -n "$n" "$TUTTI_BIN" "$SCRIPTS/place.lua"
  check_places "$n"
  expect "node 1 sum"
done

# The tutorial's layout: two nodes, four tasks on each.
srun_ok -N 2 --ntasks-per-node=4 "$TUTTI_BIN" "$SCRIPTS/place.lua"
check_places 8
for rank in 0 1 2 3; do expect_count 1 "^place rank $rank of 8 local $rank of 4 node 0 "; done
for rank in 4 5 6 7; do expect_count 1 "^place rank $rank of 8 local $((rank - 4)) of 4 node 1 "; done
# The hierarchical collectives forced through the Lua matrix (tests/lua), on 2 nodes
# of 2 ranks numbered in blocks (ranks 0-1 on the first node) and cyclically (ranks 0
# and 2 on the first): the hierarchy must put every block where its rank says.
for distribution in block cyclic; do
  LUA_PATH="$TUTTI_SOURCE_DIR/tests/lua/?.lua" \
    TUTTI_ALGO=all_reduce=hierarchical,all_gather=hierarchical,reduce_scatter=hierarchical,broadcast=hierarchical,reduce=hierarchical,gather=hierarchical,scatter=hierarchical,barrier=hierarchical,all_to_all=hierarchical \
    srun_ok -N 2 --ntasks-per-node=2 --distribution="$distribution" "$TUTTI_BIN" \
    "$TUTTI_SOURCE_DIR/tests/lua/test_collectives.lua"
  expect_count 4 "^test_collectives: rank [0-3] of 4 ran [0-9]+ calls: ok"
done
# Through node relays (TUTTI_RELAY=on): each node's local rank 0 serves one, beside
# rank 0's store, and the places and sums are the same.
TUTTI_RELAY=on TUTTI_LOG_LEVEL=info srun_ok -N 2 --ntasks-per-node=3 "$TUTTI_BIN" "$SCRIPTS/place.lua"
check_places 6
expect_count 2 "INFO: rendezvous relay on 127\.0\.0\.1:[0-9]+: listening"
echo "PASS"
