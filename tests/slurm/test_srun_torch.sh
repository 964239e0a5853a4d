#!/bin/bash
# examples/torch/ddp_train.py (DDP, DistributedSampler) with backend "tutti" under srun
# on two emulated nodes and under mpirun, as tutorials 003 and 001 run it: the rank
# from SLURM_PROCID / OMPI_COMM_WORLD_RANK, MASTER_ADDR and MASTER_PORT exported by
# hand. Each gives the same losses as the same script on gloo under the same launcher.
. "$(dirname "$0")/lib.sh"
export PYTHONPATH="$TUTTI_BIN_DIR/../python"
example="$TUTTI_SOURCE_DIR/examples/torch/ddp_train.py"
export MASTER_ADDR=127.0.0.1
unset RANK WORLD_SIZE LOCAL_RANK TUTTI_ADDR

losses() { grep -E "^Epoch_ ?[0-9]+: Loss_" "$TUTTI_TEST_DIR/out" | sort; }

for backend in tutti gloo; do
  MASTER_PORT=$(free_port) BACKEND=$backend srun_ok -N 2 --ntasks-per-node=2 /usr/bin/python3 "$example"
  expect_count 3 "^Epoch_ ?[0-9]+: Loss_"
  expect_count 1 "^weights sum .* \(backend $backend, 4 ranks\)$"
  losses >"$TUTTI_TEST_DIR/srun-$backend"
done
cmp -s "$TUTTI_TEST_DIR/srun-tutti" "$TUTTI_TEST_DIR/srun-gloo" ||
  fail "srun: tutti's losses $(cat "$TUTTI_TEST_DIR/srun-tutti") differ from gloo's $(cat "$TUTTI_TEST_DIR/srun-gloo")"

command -v mpirun >/dev/null || fail "mpirun is missing; install Debian's openmpi-bin (scripts/dev.sh does)"
mpirun=(mpirun --oversubscribe --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
for backend in tutti gloo; do
  bounded 120 "${mpirun[@]}" -np 3 -x PYTHONPATH -x MASTER_ADDR -x MASTER_PORT="$(free_port)" \
    -x BACKEND="$backend" /usr/bin/python3 "$example"
  [ "$status" -eq 0 ] || fail "mpirun -np 3 ddp_train.py ($backend) exited with $status"
  expect_count 1 "^weights sum .* \(backend $backend, 3 ranks\)$"
  losses >"$TUTTI_TEST_DIR/mpirun-$backend"
done
cmp -s "$TUTTI_TEST_DIR/mpirun-tutti" "$TUTTI_TEST_DIR/mpirun-gloo" ||
  fail "mpirun: tutti's losses $(cat "$TUTTI_TEST_DIR/mpirun-tutti") differ from gloo's $(cat "$TUTTI_TEST_DIR/mpirun-gloo")"
echo "PASS"
