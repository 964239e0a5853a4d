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
# Every example here is submitted above.
for script in examples/slurm/*.sbatch; do
  [ -f "$TUTTI_TEST_DIR/$(basename "$script" .sbatch).out" ] || fail "$script is not run by this test"
done
echo "PASS"
