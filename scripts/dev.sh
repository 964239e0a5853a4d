#!/usr/bin/env bash
# The two commands of README.md's Quick start:
#   scripts/dev.sh demo   install what is missing, build, run 4 ranks under tutti launch
#   scripts/dev.sh test   install what is missing, build, run every test (what CI runs)
# Installing is idempotent: apt runs only when a package is missing. Other scripts
# source this file for install_missing and build (BUILD_DIR, default build).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(
  build-essential cmake ninja-build pkg-config binutils clang libclang-rt-14-dev
  libuv1-dev libucx-dev liblua5.4-dev lua5.4 libcriterion-dev libssl-dev iproute2
  libedit-dev libpng-dev tmux python3-numpy python3-pytest python3-torch
  libpmix-dev openmpi-bin slurm-wlm
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
build() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j2
}

# Sourced, it only defines the above.
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "${1:-}" in
  demo)
    install_missing
    build
    "$BUILD_DIR/bin/tutti" launch -n 4 --timeout 60 -- "$BUILD_DIR/bin/01_hello"
    ;;
  test)
    install_missing
    build
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j2
    ;;
  *)
    echo "usage: scripts/dev.sh demo|test" >&2
    exit 2
    ;;
esac
