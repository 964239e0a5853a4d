#!/usr/bin/env bash
# clang-tidy with the project's checks (.clang-tidy) over the C++ sources, or the files
# given: scripts/tidy.sh [FILE...]. Reads build/compile_commands.json (every configure
# writes it). About 10 s a file on this project's 2-core machines, so the whole tree
# takes several minutes: run it on what you changed before a commit, the whole tree
# before a release. Exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}
[ -f "$build_dir/compile_commands.json" ] || { echo "tidy: no $build_dir/compile_commands.json; configure first (scripts/dev.sh test)" >&2; exit 2; }
if [ $# -gt 0 ]; then
  files=("$@")
else
  # Only the files this build compiles have a command line: the stand-ins for CUDA or
  # PMIx are compiled only where those are missing. reduce_op.cc asks the CPU for F16C
  # by a name GCC knows and clang 14 does not.
  mapfile -t files < <(git ls-files 'runtime/*.cc' 'capi/*.cc' 'launcher/*.cc' 'observe/*.cc' 'repl/*.cc' 'bindings/*.cc' |
                       grep -Ev '^runtime/(device/device_path_absent|rendezvous/pmix_exchange_missing|operation/reduce_op)\.cc$')
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# The build's flags are GCC's: clang-tidy is told to pass over the few it lacks.
run-clang-tidy -quiet -p "$build_dir" -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option "${files[@]/#/$PWD/}" >"$log" 2>&1 || status=$?
grep -E "(warning|error): " "$log" | sort -u || true
[ "$status" -eq 0 ] && echo "tidy: ${#files[@]} files pass .clang-tidy's checks" || echo "tidy: findings above (exit $status)"
exit "$status"
