#!/bin/sh
# Fails when libtutti.so exports any symbol not named tutti_* (STYLE G9), lacks one of the
# device-buffer calls, needs CUDA, NCCL or PMIx to load, or holds more than 1 KiB of
# thread-local storage.
# Usage: test_exports.sh PATH/TO/libtutti.so
set -eu
library=$1
stray=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | grep -v '^tutti_' || true)
if [ -n "$stray" ]; then
  echo "libtutti.so exports symbols outside the tutti_ namespace:"
  echo "$stray"
  exit 1
fi
# The device-buffer calls are exported in every build, with CUDA or without.
for symbol in tutti_comm_set_memory tutti_comm_set_device tutti_comm_set_stream tutti_work_wait_stream; do
  if ! nm -D --defined-only "$library" | awk '{sub(/@.*/, "", $3); print $3}' | grep -qx "$symbol"; then
    echo "libtutti.so does not export $symbol"
    exit 1
  fi
done
# Nor does it need CUDA, NCCL or PMIx to load: each is opened at run time, where present
# and where its path runs.
if readelf -d "$library" | grep -E 'NEEDED.*(cudart|nccl|libcuda|pmix)'; then
  echo "libtutti.so links CUDA, NCCL or PMIx; they must be loaded at run time (runtime/device/nccl/*_api.cc," \
       "runtime/rendezvous/pmix_exchange.cc)"
  exit 1
fi
# Nor does every thread of the program pay for it: a library's thread-local storage is
# laid out and zeroed for each thread the program starts, its own or not (a 64 KiB
# thread_local read buffer once cost 10,000 simulated ranks 1.4 GiB).
tls=$(readelf -lW "$library" | awk '$1 == "TLS" {print $6}')
if [ -n "$tls" ] && [ $((tls)) -gt 1024 ]; then
  echo "libtutti.so holds $((tls)) bytes of thread-local storage, which every thread of a program pays;"
  echo "keep big buffers on the heap (see runtime/loop/loop.h's read_buffer)"
  exit 1
fi
count=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TDRBVW]$/' | wc -l)
echo "libtutti.so exports $count symbols, all tutti_*"
