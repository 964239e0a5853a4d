#!/usr/bin/env bash
# The two commands of README.md's Quick start:
#   scripts/dev.sh demo   install what is missing, build, run 4 ranks under tutti launch
#   scripts/dev.sh test   install what is missing, build, run every test (what CI runs)
# Installing is idempotent: apt runs only when a package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config binutils
  libuv1-dev libucx-dev liblua5.4-dev lua5.4 libcriterion-dev
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

build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j2
}

case "${1:-}" in
  demo)
    install_missing
    build
    ./build/bin/tutti launch -n 4 --timeout 60 -- ./build/bin/01_hello
    ;;
  test)
    install_missing
    build
    ctest --test-dir build --output-on-failure -j2
    ;;
  *)
    echo "usage: scripts/dev.sh demo|test" >&2
    exit 2
    ;;
esac
