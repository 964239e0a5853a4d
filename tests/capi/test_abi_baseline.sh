#!/usr/bin/env bash
# The ABI of libtutti.so.0 against its committed baseline (capi/abi/libtutti.so.0.abi,
# libabigail's abidw of the exported interfaces and the types of tutti.h they reach):
#   test_abi_baseline.sh check  LIBRARY SOURCE   fails on any change, saying what changed
#   test_abi_baseline.sh update LIBRARY SOURCE   rewrites the baseline (a deliberate change)
#   test_abi_baseline.sh selftest LIBRARY SOURCE checks that check fails, with the right
#                                                message, on a baseline that had a function
#                                                the library lost, and on one that lacked
#                                                a function the library has, and on a
#                                                baseline cut short
# An incompatible change (a function removed, a type changed) breaks programs built
# against libtutti.so.0; an addition does not, but is recorded, so that the baseline
# always says what 0.x promises (--harmless: an enumerator added counts too). Paths in the baseline are relative to SOURCE, so that
# it does not depend on where the tree is checked out.
set -euo pipefail
mode=$1
library=$2
source_dir=$3
baseline=${BASELINE:-$source_dir/capi/abi/libtutti.so.0.abi}
drafts="$source_dir/capi/abi/draft.suppr"  # the draft API is no part of the baseline
update="tests/capi/test_abi_baseline.sh update build/lib/libtutti.so.0 ."

for tool in abidw abidiff; do
  command -v "$tool" >/dev/null ||
    { echo "test_abi_baseline: $tool is missing; install abigail-tools (scripts/dev.sh does)" >&2; exit 1; }
done

case "$mode" in
  update)
    abidw --no-corpus-path --no-comp-dir-path --no-show-locs --exported-interfaces-only --drop-private-types \
          --suppressions "$drafts" --headers-dir "$source_dir/capi/include" "$library" |
      sed "s|path='$(cd "$source_dir" && pwd)/|path='|" >"$baseline"
    echo "test_abi_baseline: wrote $baseline; commit it with the change that made it"
    ;;
  check)
    set +e
    report=$(abidiff --harmless --exported-interfaces-only --suppressions "$drafts" --headers-dir2 "$source_dir/capi/include" "$baseline" "$library" 2>&1)
    status=$?
    set -e
    # abidiff reads a broken baseline as an empty one, and says so only on stderr.
    if grep -q "parser error" <<<"$report"; then
      echo "$report"
      echo "test_abi_baseline: $baseline is not well-formed; restore it from git, or run: $update" >&2
      exit 1
    fi
    # abidiff's status is a bit mask: 1 error, 2 usage, 4 an ABI change, 8 an incompatible one.
    if [ "$status" -eq 0 ]; then
      echo "test_abi_baseline: libtutti.so.0 matches capi/abi/libtutti.so.0.abi"
      exit 0
    fi
    echo "$report"
    if (( status & 3 )); then
      echo "test_abi_baseline: abidiff failed (status $status)" >&2
    elif (( status & 8 )); then
      echo "test_abi_baseline: INCOMPATIBLE: programs built against libtutti.so.0 would break (above). Undo the" \
           "change, or make it a new ABI: raise TUTTI_VERSION_MAJOR and the SONAME, then run: $update" >&2
    else
      echo "test_abi_baseline: the ABI changed (above). An addition (a function, a field appended to a versioned" \
           "struct, an enum value) keeps old programs working: if it is deliberate, run: $update" \
           "and commit the baseline with it. Anything else breaks programs built against libtutti.so.0." >&2
    fi
    exit 1
    ;;
  selftest)
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    # The library lost tutti_barrier: the baseline names it, the library does not export it.
    sed "s/'tutti_barrier'/'tutti_barrier_gone'/" "$baseline" >"$scratch/lost.abi"
    if output=$(BASELINE="$scratch/lost.abi" bash "$0" check "$library" "$source_dir" 2>&1); then
      echo "test_abi_baseline: a lost function was not noticed: $output" >&2; exit 1
    fi
    grep -q "INCOMPATIBLE" <<<"$output" || { echo "test_abi_baseline: a lost function is not called incompatible: $output" >&2; exit 1; }
    # The library gained tutti_barrier: the baseline never had it.
    sed "/<elf-symbol name='tutti_barrier'/d; /<function-decl name='tutti_barrier'/,/<\/function-decl>/d" "$baseline" \
      >"$scratch/added.abi"
    if output=$(BASELINE="$scratch/added.abi" bash "$0" check "$library" "$source_dir" 2>&1); then
      echo "test_abi_baseline: an added function was not noticed: $output" >&2; exit 1
    fi
    grep -q "if it is deliberate, run: " <<<"$output" || { echo "test_abi_baseline: an addition does not say how to record it: $output" >&2; exit 1; }
    grep -q "INCOMPATIBLE" <<<"$output" && { echo "test_abi_baseline: an addition is called incompatible: $output" >&2; exit 1; }
    # A baseline cut short is an error, not an empty ABI that anything matches.
    head -c 4000 "$baseline" >"$scratch/broken.abi"
    if output=$(BASELINE="$scratch/broken.abi" bash "$0" check "$library" "$source_dir" 2>&1); then
      echo "test_abi_baseline: a broken baseline passed: $output" >&2; exit 1
    fi
    echo "test_abi_baseline: selftest ok"
    ;;
  *)
    echo "usage: test_abi_baseline.sh check|update|selftest LIBRARY SOURCE" >&2
    exit 2
    ;;
esac
