#!/bin/sh
# Fails when libtutti.so exports any symbol not named tutti_* (STYLE G9).
# Usage: test_exports.sh PATH/TO/libtutti.so
set -eu
library=$1
stray=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | grep -v '^tutti_' || true)
if [ -n "$stray" ]; then
  echo "libtutti.so exports symbols outside the tutti_ namespace:"
  echo "$stray"
  exit 1
fi
count=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TDRBVW]$/' | wc -l)
echo "libtutti.so exports $count symbols, all tutti_*"
