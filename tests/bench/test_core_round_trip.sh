#!/bin/sh
# core-round-trip --syscall (bench/core_round_trip.c): what a bare system call takes,
# which scripts/bench-vs-mpi.sh prints in its header, as "<ns> ns" with a plausible
# value; and an argument it does not know is refused with its usage. (Its default mode
# pins two spinning threads, one to each of two CPUs, which a loaded CI machine can
# slow by minutes: not run here.)
# Usage: test_core_round_trip.sh PATH/TO/core-round-trip
set -eu
tool=$1

printed=$(timeout 60 "$tool" --syscall)
echo "core-round-trip --syscall: $printed"
ns=$(echo "$printed" | sed -n 's/^\([0-9][0-9]*\) ns$/\1/p')
[ -n "$ns" ] || { echo "FAIL: expected '<ns> ns', got '$printed'" >&2; exit 1; }
# A system call takes some nanoseconds, and less than a millisecond even in a VM.
[ "$ns" -gt 0 ] && [ "$ns" -lt 1000000 ] || { echo "FAIL: $ns ns for a system call" >&2; exit 1; }

status=0
refused=$("$tool" --no-such-flag 2>&1) || status=$?
[ "$status" -eq 2 ] || { echo "FAIL: an unknown argument exited $status, expected 2" >&2; exit 1; }
case "$refused" in
  *usage:*--syscall*) ;;
  *) echo "FAIL: an unknown argument said '$refused', expected the usage" >&2; exit 1 ;;
esac
echo "PASS"
