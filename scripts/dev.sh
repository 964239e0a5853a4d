#!/usr/bin/env bash
# The two commands of README.md's Quick start:
#   scripts/dev.sh demo   install what is missing, build, run 4 ranks under tutti launch
#   scripts/dev.sh test   install what is missing, build, run every test (what CI runs)
# Installing is idempotent: apt runs only when a package is missing. Other scripts
# source this file for install_missing and build (BUILD_DIR, default build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake ninja-build pkg-config binutils clang libclang-rt-14-dev clang-format clang-tidy
  libuv1-dev libucx-dev liblua5.4-dev lua5.4 libcriterion-dev iproute2
  libedit-dev libpng-dev tmux python3-numpy python3-pytest python3-torch
  libpmix-dev openmpi-bin slurm-wlm
  man-db dpkg-dev python3-pip python3-setuptools python3-venv abigail-tools
  nlohmann-json3-dev chromium
)

install_missing() {
  local missing=()
  for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "scripts/dev.sh: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

BUILD_DIR="${BUILD_DIR:-build}"
# build [CMAKE_OPTION...] [-- TARGET...]: configures and builds, quietly: the log goes to
# $BUILD_DIR/build.log, and only a failure prints (its last lines).
build() {
  local options=() targets=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do options+=("$1"); shift; done
  [ $# -gt 0 ] && shift && targets=(--target "$@")
  mkdir -p "$BUILD_DIR"
  echo "scripts/dev.sh: building in $BUILD_DIR (log: $BUILD_DIR/build.log)"
  if ! { cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${options[@]}" &&
         cmake --build "$BUILD_DIR" -j2 "${targets[@]}"; } >"$BUILD_DIR/build.log" 2>&1; then
    tail -n 60 "$BUILD_DIR/build.log"
    echo "scripts/dev.sh: the build failed; the whole log is $BUILD_DIR/build.log" >&2
    return 1
  fi
}

# The thread-heavy tests (label threads: the loop, the executor, the health monitor, the
# GPU watchdog, Works from several threads) again, built with ThreadSanitizer in
# build-tsan: only them and what they link, at -O1 with line tables only (about half
# the compile time of -O2 -g), with assertions on. Any report fails the run
# (tests/tsan.supp lists the false positives of the uninstrumented libraries, each
# with why). Some kernels randomize mmap more than gcc 12's TSan can map around
# ("FATAL: ThreadSanitizer: unexpected memory mapping"); without address
# randomization (setarch -R, where the machine allows it) it always can.
thread_sanitizer_test() {
  local BUILD_DIR=build-tsan
  build -DTUTTI_SANITIZE=thread -DTUTTI_BUILD_TESTS=ON -DTUTTI_BUILD_DRAFT_API=ON -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -- tutti_thread_tests
  local fixed_layout=()
  setarch "$(uname -m)" -R true 2>/dev/null && fixed_layout=(setarch "$(uname -m)" -R)
  if ! "${fixed_layout[@]}" ctest --test-dir "$BUILD_DIR" -L threads --output-on-failure -j2; then
    echo "scripts/dev.sh: FAILED under ThreadSanitizer (build-tsan):" >&2
    grep -h "SUMMARY: ThreadSanitizer" "$BUILD_DIR/Testing/Temporary/LastTest.log" | sort | uniq -c >&2 || true
    echo "scripts/dev.sh: each report is above (WARNING: ThreadSanitizer, both stacks); a race in tutti is" \
         "fixed, a false positive of an uninstrumented library goes into tests/tsan.supp with why." \
         "Again: ctest --test-dir build-tsan -L threads --output-on-failure" >&2
    return 1
  fi
}

# Sourced, it only defines the above.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
  demo)
    install_missing
    build -- tutti_cli tutti_lua_module
    "$BUILD_DIR/bin/tutti" run -n 4 --timeout 60 examples/lua/01_all_reduce.lua
    ;;
  test)
    install_missing
    # Every part, and a missing dependency is an error rather than a part left out; the
    # draft API too, so that it is tested.
    build -DTUTTI_BUILD_LUA=ON -DTUTTI_BUILD_REPL=ON -DTUTTI_BUILD_PYTHON=ON -DTUTTI_BUILD_TESTS=ON \
          -DTUTTI_BUILD_EXAMPLES=ON -DTUTTI_BUILD_BENCH=ON -DTUTTI_FUZZ=ON -DTUTTI_BUILD_DRAFT_API=ON
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
    thread_sanitizer_test
    ;;
  *)
    echo "usage: scripts/dev.sh demo|test" >&2
    exit 2
    ;;
esac
