#!/bin/bash
# Every sbatch script in examples/slurm, submitted as its header says (from the
# repository root), waited for, and its output file checked against what the header
# says it prints.
. "$(dirname "$0")/lib.sh"
cd "$TUTTI_SOURCE_DIR"
export TUTTI_BIN_DIR

# submit NAME: sbatch --wait examples/slurm/NAME.sbatch; its output becomes the last
# command's output.
submit() {
  bounded 180 sbatch --wait --output="$TUTTI_TEST_DIR/$1.out" "examples/slurm/$1.sbatch"
  cat "$TUTTI_TEST_DIR/$1.out" >&2
  cp "$TUTTI_TEST_DIR/$1.out" "$TUTTI_TEST_DIR/out"
  [ "$status" -eq 0 ] || fail "the job of examples/slurm/$1.sbatch failed (sbatch --wait exited with $status)"
}

submit one_node
expect_count 4 "^rank [0-3] of 4 \(local rank [0-3] of 4 on node 0\): in the (even|odd) group as rank [01] of 2$"
for rank in 0 1 2 3; do expect_count 1 "^rank $rank of 4 \(local rank $rank of 4 on node 0\)"; done

submit two_nodes
expect_count 8 "^rank [0-7] of 8 \(local rank [0-3] of 4 on node [01]\): in the (even|odd) group as rank [0-3] of 4$"
for rank in 0 1 2 3; do expect_count 1 "^rank $rank of 8 \(local rank $rank of 4 on node 0\)"; done
for rank in 4 5 6 7; do expect_count 1 "^rank $rank of 8 \(local rank $((rank - 4)) of 4 on node 1\)"; done

submit lua_script
expect_count 1 "^Rank: 0, 840 samples, 210 on each of 4 ranks\.$"
expect_count 1 "^Rank: 0, step 0, loss 2\.1694\.$"
expect_count 1 "^Rank: 0, accuracy 92\.7% \(779 of 840\)\.$"
expect_count 4 "^Rank: [0-3], largest difference between the ranks' weights: 0\.$"
submit python_train
expect_count 1 "^Rank: 0, linear regression, 840 samples, 210 on each of 4 ranks\.$"
expect_count 4 "^Rank: [0-3], linear regression, weights \[ 2\.0 -1\.0 0\.5 3\.0 \] bias 1\.0 "
expect_count 4 "^Rank: [0-3], mlp, accuracy 100\.0% \(840 of 840\)\.$"
expect_count 4 "^Rank: [0-3], the model was identical on every rank after each of 402 steps\.$"
# Rank 2 dies at step 40, killed, then frozen; the survivors (ranks 0, 1 and 3, then 0,
# 1 and 2) shrink and grow back with the spare, which joins as rank 3; every rank ends
# with the same weights. The frozen rank, woken at the end, says it was declared lost.
expect_healed() {
  expect_count 4 "^rank [0-3] of 4: training, 120 steps$"
  # Step 39 for a survivor still finishing step 39's all_reduce when the loss arrives
  # (rank 2 has finished its part): a lost rank fails every operation in flight on
  # the communicator. Every survivor resumes at the step they agree on, 40.
  expect_count 3 "^rank [013] of 4: step (39|40) failed: PEER_LOST$"
  expect_count 3 "^rank [0-2] of 3: shrank to the 3 survivors$"
  expect_count 1 "^rank 3 of 4: joined the job$"
  expect_count 3 "^rank [0-2] of 4: grew back to 4 ranks; resuming at step 40$"
  expect_count 4 \
    "^rank [0-3] of 4: done: step 120, weights 2\.00 -1\.00 0\.50 3\.00 bias 1\.00, identical on every rank$"
}
TUTTI_PORT=$(free_port) submit heal
expect_healed
HEAL_SIGNAL=STOP TUTTI_HEARTBEAT_INTERVAL_MS=500 TUTTI_HEARTBEAT_TIMEOUT_MS=3000 TUTTI_PORT=$(free_port) submit heal
expect_healed
expect "rank 2 of 4: TUTTI_ERR_PEER_LOST: comm:shrink: comm \"world\" \(rank 2 of 4\) cannot shrink: this rank was declared lost by the rendezvous store"
# Every example here is submitted above.
for script in examples/slurm/*.sbatch; do
  [ -f "$TUTTI_TEST_DIR/$(basename "$script" .sbatch).out" ] || fail "$script is not run by this test"
done
echo "PASS"
