#!/bin/bash
# Open MPI's mpirun (4.1, from Debian) with no MASTER_ADDR and no -x: tutti takes the
# ranks from OMPI_COMM_WORLD_* and the store's address through mpirun's PMIx server.
# A Lua script, a C program and a Python script with checked results, and a failing
# rank named.
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || fail "mpirun is missing; install Debian's openmpi-bin (scripts/dev.sh does)"

# Loopback only, more ranks than cores, and root allowed where the tests run as root.
mpirun=(mpirun --oversubscribe --mca oob_tcp_if_include lo --mca btl_tcp_if_include lo)
[ "$(id -u)" -ne 0 ] || mpirun+=(--allow-run-as-root)
unset MASTER_ADDR MASTER_PORT TUTTI_ADDR

for n in 1 3 4; do
  bounded 120 "${mpirun[@]}" -np "$n" "$TUTTI_BIN" "$SCRIPTS/place.lua"
  [ "$status" -eq 0 ] || fail "mpirun -np $n exited with $status"
  expect_count "$n" "^place rank [0-9]+ of $n local [0-9]+ of $n node 0 sum $((n * (n + 1) / 2)) "
  for ((rank = 0; rank < n; rank++)); do expect_count 1 "^place rank $rank of $n local $rank of $n "; done
done

TUTTI_LOG_LEVEL=info bounded 120 "${mpirun[@]}" -np 4 "$TUTTI_BIN_DIR/01_hello"
[ "$status" -eq 0 ] || fail "mpirun -np 4 01_hello exited with $status"
expect_count 4 "rendezvous address from PMIx"
for rank in 0 1 2 3; do expect_count 1 "^rank $rank of 4 \(local rank $rank of 4 on node 0\): in the"; done

bounded 120 "${mpirun[@]}" -np 3 -x PYTHONPATH="$TUTTI_BIN_DIR/../python" /usr/bin/python3 "$SCRIPTS/place.py"
[ "$status" -eq 0 ] || fail "mpirun -np 3 python3 place.py exited with $status"
expect_count 3 "^place rank [0-2] of 3 local [0-2] of 3 node 0 sum 6$"
for rank in 0 1 2; do expect_count 1 "^place rank $rank of 3 local $rank of 3 "; done

bounded 120 "${mpirun[@]}" -np 4 "$TUTTI_BIN" "$SCRIPTS/fail.lua" error 2
[ "$status" -ne 0 ] || fail "mpirun exited 0 although rank 2 failed"
expect "^tutti: rank 2 of 4: .*fail.lua:[0-9]+: rank 2 fails on purpose"

bounded 120 "${mpirun[@]}" -np 4 "$TUTTI_BIN" "$SCRIPTS/fail.lua" kill 1
[ "$status" -ne 0 ] || fail "mpirun exited 0 although rank 1 was killed"
expect "tutti: rank [023] of 4: .*rank 1 .*lost"
echo "PASS"
