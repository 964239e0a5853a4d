#!/usr/bin/env bash
# test_deb.sh BUILD SOURCE: makes the Debian package (cpack -G DEB), checks its
# Depends and contents, then installs it for real with apt in a throwaway root: an
# overlay of / in a mount namespace of this test's own, so that nothing outside it
# changes and everything vanishes when the test ends. There, with no variable set by
# hand, it runs what a user would: tutti launch, import tutti, require "tutti", a C
# program built with pkg-config and with find_package, and man tutti. Without root or
# mount namespaces the install step cannot run; it then says so and ctest reports the
# test skipped ("test_deb SKIPPED").
set -euo pipefail
build_dir=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

fail() {
  echo "test_deb: $*" >&2
  exit 1
}

cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$scratch/package" >"$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log"; fail "cpack -G DEB failed"; }
version=$("$build_dir/bin/tutti" version | cut -d' ' -f2)
deb="$scratch/package/tutti_${version}_amd64.deb"
[ -f "$deb" ] || fail "no $deb: $(ls "$scratch/package")"

info=$(dpkg-deb -I "$deb")
depends=$(sed -n 's/^ Depends: //p' <<<"$info")
for package in "libuv1 (>= 1.44)" libucx0 liblua5.4-0 libedit2 libpng16-16 "python3 (>= 3.9)"; do
  grep -qF "$package" <<<"$depends" || fail "Depends lacks $package: $depends"
done
# The store's handshake carries its own SHA-256 (runtime/store/sha256.h): no libssl.
! grep -qF libssl <<<"$depends" || fail "Depends names libssl, which nothing should link: $depends"
# PMIx is opened at run time, where a rank's path needs it: recommended, not required.
! grep -qF libpmix <<<"$depends" || fail "Depends names libpmix, which nothing should link: $depends"
if grep -q "PMIX_FOUND:INTERNAL=1" "$build_dir/CMakeCache.txt"; then
  recommends=$(sed -n 's/^ Recommends: //p' <<<"$info")
  grep -qF libpmix2 <<<"$recommends" || fail "Recommends lacks libpmix2: $recommends"
fi
contents=$(dpkg-deb -c "$deb")
for file in ./usr/bin/tutti ./usr/lib/libtutti.so.0.${version#0.} ./usr/include/tutti.h ./usr/include/tutti_float16.h ./usr/include/tutti_float8.h ./usr/include/tutti/tutti.hpp \
            ./usr/lib/pkgconfig/tutti.pc ./usr/lib/cmake/tutti/tuttiConfig.cmake ./usr/lib/lua/5.4/tutti.so \
            ./usr/lib/python3.11/dist-packages/tutti/__init__.py ./usr/share/man/man1/tutti.1 ./usr/share/man/man3/tutti.3 \
            ./usr/share/doc/tutti/copyright; do
  grep -qE " $file( |$)" <<<"$contents" || fail "the package lacks $file"
done
grep -qE " ./usr/lib/libtutti.so.0 -> libtutti.so" <<<"$contents" || fail "the package lacks the libtutti.so.0 link"
# Stripped: the package carries no debug sections.
size=$(sed -n 's/^ Installed-Size: //p' <<<"$info")
[ "$size" -lt 40000 ] || fail "Installed-Size is $size KiB: are the binaries stripped?"

# Installing it for real, in a root of its own.
if [ "$(id -u)" -ne 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
  echo "test_deb SKIPPED the install step: it needs root and mount namespaces (unshare) to install into a throwaway root; the package itself was checked"
  exit 0
fi
mkdir -p "$scratch/root"
cp "$deb" "$scratch/tutti.deb"
cp "$source_dir/examples/c/02_collectives.c" "$scratch/"
cat >"$scratch/inside.sh" <<'INSIDE'
set -euo pipefail
cd /scratch
apt-get install -y -qq /scratch/tutti.deb >apt.log 2>&1 || { cat apt.log; exit 1; }
dpkg -s tutti | grep -q "Status: install ok installed"
export PATH=/usr/bin:/bin HOME=/scratch
unset LD_LIBRARY_PATH LUA_CPATH LUA_PATH PYTHONPATH PKG_CONFIG_PATH
tutti launch -n 2 --timeout 60 -- python3 -c 'import numpy, tutti; tutti.init(); x = numpy.ones(2); tutti.all_reduce(x); print("python", x.tolist())'
tutti launch -n 2 --timeout 60 -- lua5.4 -e 'local t = require "tutti"; local x = t.ones{2}; t.all_reduce(x); print("lua " .. x:sum())'
cc 02_collectives.c $(pkg-config --cflags --libs tutti) -o collectives
tutti launch -n 2 --timeout 60 -- ./collectives | grep "all_reduce(sum)"
mkdir -p app && cp 02_collectives.c app/ &&
  printf 'cmake_minimum_required(VERSION 3.22)\nproject(app C)\nfind_package(tutti REQUIRED)\nadd_executable(c 02_collectives.c)\ntarget_link_libraries(c PRIVATE tutti::tutti)\n' >app/CMakeLists.txt
cmake -S app -B app-build -G Ninja >cmake.log 2>&1 && cmake --build app-build >>cmake.log 2>&1 || { cat cmake.log; exit 1; }
tutti launch -n 2 --timeout 60 -- app-build/c | grep "broadcast"
echo "man: $(man -w tutti) $(man -w 3 tutti) $(man -w tutti_all_reduce)"  # the function pages lead to tutti(3)
apt-get remove -y -qq tutti >>apt.log 2>&1 && [ ! -e /usr/bin/tutti ] && [ ! -e /usr/lib/libtutti.so.0 ] && echo "removed"
INSIDE
output=$(unshare --mount --propagation private bash -c '
  set -e
  scratch=$1
  mount -t tmpfs tmpfs "$scratch/root"
  mkdir "$scratch/root/upper" "$scratch/root/work" "$scratch/root/merged"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$scratch/root/upper,workdir=$scratch/root/work" "$scratch/root/merged"
  for dir in proc sys dev; do mount --rbind "/$dir" "$scratch/root/merged/$dir"; done
  mkdir -p "$scratch/root/merged/scratch"
  mount --bind "$scratch" "$scratch/root/merged/scratch"
  mount -t tmpfs tmpfs "$scratch/root/merged/tmp"
  exec chroot "$scratch/root/merged" timeout 300 bash /scratch/inside.sh' _ "$scratch" 2>&1) ||
  fail "installing the package in a throwaway root failed: $output"
for expected in "[0] python [2.0, 2.0]" "[1] lua 4.0" "[0] all_reduce(sum):" "[1] broadcast(root 0):" \
                "man: /usr/share/man/man1/tutti.1 /usr/share/man/man3/tutti.3 /usr/share/man/man3/tutti.3" "removed"; do
  grep -qF -- "$expected" <<<"$output" || fail "expected \"$expected\" in:
$output"
done
# Nothing leaked out of the throwaway root.
! dpkg -s tutti >/dev/null 2>&1 || fail "the package is installed on this machine itself"
echo "test_deb: ok ($(basename "$deb"), Installed-Size $size KiB)"
