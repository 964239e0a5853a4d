# shellcheck shell=bash
# What every test in tests/slurm sources: the paths ctest passes in, a bounded way to
# run srun, sbatch and mpirun, and checks that say what they expected and what came.
# ctest sets SLURM_CONF (the cluster its fixture started), TUTTI_BIN (the tutti
# command), TUTTI_BIN_DIR (build/bin), TUTTI_SOURCE_DIR and TUTTI_TEST_DIR (a folder
# of this test's own, emptied first).
set -euo pipefail

for variable in TUTTI_BIN TUTTI_BIN_DIR TUTTI_SOURCE_DIR TUTTI_TEST_DIR; do
  [ -n "${!variable:-}" ] || { echo "FAIL: $variable is not set; run this test through ctest" >&2; exit 1; }
done
rm -rf "$TUTTI_TEST_DIR" && mkdir -p "$TUTTI_TEST_DIR"
SCRIPTS="$TUTTI_SOURCE_DIR/tests/slurm/scripts"
# Every wait in tutti is bounded well below the test's own bounds, so that a hang
# shows tutti's message rather than a killed test.
export TUTTI_INIT_TIMEOUT_MS=30000 TUTTI_OP_TIMEOUT_MS=30000

# A free loopback port below Linux's ephemeral range (tests/bindings/python/ports.py),
# which a process binding port 0 (an outgoing connection, UCX's listeners) cannot take
# before the job binds it; a port the kernel handed out for port 0 can be, and CI saw
# EADDRINUSE that way.
free_port() {
  /usr/bin/python3 -c "import sys; sys.path.insert(0, '$TUTTI_SOURCE_DIR/tests/bindings/python')
from ports import free_port; print(free_port())"
}

fail() {
  echo "FAIL: $*" >&2
  [ -z "${SLURM_CONF:-}" ] || echo "(Slurm's own logs are in $(dirname "$SLURM_CONF")/log)" >&2
  exit 1
}

# bounded SECONDS COMMAND...: runs COMMAND, sending SIGTERM after SECONDS and SIGKILL
# 5 s later (srun then cancels its step); its output goes to $TUTTI_TEST_DIR/out and
# is echoed, and its exit status to $status. A command that ran out of time fails the
# test: timeout says so itself, since srun's own status may be 137 (a task killed).
bounded() {
  local seconds=$1
  shift
  echo "+ $*" >&2
  status=0
  timeout --verbose -k 5 "$seconds" "$@" >"$TUTTI_TEST_DIR/out" 2>&1 || status=$?
  cat "$TUTTI_TEST_DIR/out" >&2
  if grep -q "^timeout: sending signal" "$TUTTI_TEST_DIR/out"; then fail "$* did not finish within $seconds s"; fi
}

# Runs srun with a time limit of its own, and fails the test unless it exits 0.
srun_ok() {
  bounded 120 srun --time=2 "$@"
  [ "$status" -eq 0 ] || fail "srun $* exited with $status"
}

# expect_count N PATTERN: the last command printed exactly N lines matching PATTERN
# (an extended regular expression).
expect_count() {
  local got
  got=$(grep -cE -- "$2" "$TUTTI_TEST_DIR/out" || true)
  [ "$got" -eq "$1" ] || fail "expected $1 lines matching '$2', got $got"
}

# expect PATTERN: the last command printed at least one line matching PATTERN.
expect() {
  grep -qE -- "$1" "$TUTTI_TEST_DIR/out" || fail "expected a line matching '$1'"
}
