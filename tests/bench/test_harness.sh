#!/bin/sh
# tutti-bench's harness (bench/harness.c), through tutti launch at 2 ranks: all_reduce
# out of place and in place (-i 1), and sendrecv, each checked against values computed locally
# (-c 1, its exit status 1 on a wrong element), and -i 1 refused for an operation it
# does not apply to; -B's median of timed blocks, and a -B past its bound refused. Each
# run is bounded by tutti launch --timeout.
# Usage: test_harness.sh PATH/TO/tutti PATH/TO/tutti-bench
set -eu
launcher=$1
bench=$2
run() {
  "$launcher" launch -n 2 --timeout 60 --no-tag-output -- "$bench" "$@"
}
for in_place in 0 1; do
  for memory in host shared; do
    out=$(run all_reduce -b 8 -e 4M -f 32 -i $in_place -m $memory) || {
      echo "all_reduce -i $in_place -m $memory failed:"
      echo "$out"
      exit 1
    }
    case "$out" in
      *"# wrong elements: 0"*) ;;
      *) echo "all_reduce -i $in_place -m $memory did not report 0 wrong elements:"; echo "$out"; exit 1 ;;
    esac
    if [ $in_place = 1 ]; then
      case "$out" in
        *"blocking, in place"*) ;;
        *) echo "-i 1 is not said in the header:"; echo "$out"; exit 1 ;;
      esac
    fi
  done
done
# sendrecv: each rank's buffer reaches its partner, checked, from 8 bytes past UCX's
# rendezvous sizes, blocking and with works (-a 1).
for async in 0 1; do
  out=$(run sendrecv -b 8 -e 1M -f 32 -a $async) || {
    echo "sendrecv -a $async failed:"
    echo "$out"
    exit 1
  }
  case "$out" in
    *"# wrong elements: 0"*) ;;
    *) echo "sendrecv -a $async did not report 0 wrong elements:"; echo "$out"; exit 1 ;;
  esac
done
# -B: the median of several timed blocks, said in the header, every call still checked.
out=$(run broadcast -b 8 -e 8 -n 50 -B 5) || {
  echo "broadcast -B 5 failed:"
  echo "$out"
  exit 1
}
case "$out" in
  *"time = the median of 5 blocks"*"# wrong elements: 0"*) ;;
  *) echo "broadcast -B 5 did not say its blocks or did not check:"; echo "$out"; exit 1 ;;
esac
if out=$(run broadcast -B 65 2>&1); then
  echo "-B 65 was accepted:"
  echo "$out"
  exit 1
fi
if out=$(run broadcast -i 1 2>&1); then
  echo "broadcast -i 1 was accepted:"
  echo "$out"
  exit 1
fi
case "$out" in
  *"-i 1 runs all_reduce in place"*) ;;
  *) echo "broadcast -i 1 was refused without saying why:"; echo "$out"; exit 1 ;;
esac
echo "test_harness: all_reduce out of place and in place, host and shared memory, sendrecv, checked; -B blocks"
