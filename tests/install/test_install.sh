#!/usr/bin/env bash
# What a user does after `cmake --install`, from outside the source tree, against a
# prefix the fixture installed into (tests/install/CMakeLists.txt):
#   test_install.sh install BUILD PREFIX          the fixture: cmake --install BUILD --prefix PREFIX
#   test_install.sh cmake_package SOURCE PREFIX   examples/c/02_collectives.c built with
#                                                 find_package(tutti), the C++ example with
#                                                 tutti::cpp, both run under PREFIX/bin/tutti launch
#   test_install.sh pkg_config SOURCE PREFIX      the same C example through pkg-config
#   test_install.sh python SOURCE PREFIX          import tutti from PREFIX; a 2-rank all_reduce
#   test_install.sh pip SOURCE PREFIX             pip install ./bindings/python into a venv
#   test_install.sh lua SOURCE PREFIX             require "tutti" from a plain lua5.4
#   test_install.sh man SOURCE PREFIX             man -l renders each page without warnings
#   test_install.sh relocated SOURCE - BUILD      a prefix of its own, moved, still works
#   test_install.sh library_alone SOURCE -        configure with only libuv and UCX
# Each makes its own scratch folder and removes it; rank jobs are bounded by --timeout.
set -euo pipefail

what=$1
source_dir=$2
prefix=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

fail() {
  echo "test_install $what: $*" >&2
  exit 1
}

# expect_in OUTPUT TEXT: OUTPUT holds TEXT.
expect_in() {
  grep -qF -- "$2" <<<"$1" || fail "expected \"$2\" in:
$1"
}

# Runs the installed command, as a user with only PREFIX/bin on their PATH would.
tutti_launch() {
  env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="$scratch" "$@"
}

check_collectives_output() {
  expect_in "$1" "[0] all_reduce(sum):     [1 3 5 7]"
  expect_in "$1" "[1] all_gather:          [0 1 2 3] [1 2 3 4]"
}

case "$what" in
  install)
    build_dir=$source_dir
    rm -rf "$prefix"
    cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install.log" || { cat "$scratch/install.log"; exit 1; }
    for file in bin/tutti lib/libtutti.so.0 lib/libtutti.so include/tutti.h include/tutti_float16.h include/tutti_float8.h include/tutti/tutti.hpp \
                lib/cmake/tutti/tuttiConfig.cmake lib/cmake/tutti/tuttiConfigVersion.cmake lib/pkgconfig/tutti.pc \
                lib/lua/5.4/tutti.so share/man/man1/tutti.1 share/man/man3/tutti.3 \
                share/man/man3/tutti_comm_init.3 share/doc/tutti/examples/c/02_collectives.c; do
      [ -e "$prefix/$file" ] || fail "cmake --install did not install $file"
    done
    # The SONAME chain: libtutti.so -> libtutti.so.0 -> libtutti.so.VERSION.
    [ "$(readlink "$prefix/lib/libtutti.so")" = libtutti.so.0 ] || fail "libtutti.so does not point to libtutti.so.0"
    readelf -d "$prefix/lib/libtutti.so.0" | grep -q 'SONAME.*\[libtutti.so.0\]' || fail "the SONAME is not libtutti.so.0"
    readelf -d "$prefix/bin/tutti" | grep -q 'RUNPATH.*\$ORIGIN/\.\./lib' || fail "bin/tutti has no \$ORIGIN/../lib runpath"
    ;;

  cmake_package)
    mkdir app && cp "$source_dir/examples/c/02_collectives.c" "$source_dir/examples/cpp/01_all_reduce.cc" app/
    cat >app/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.22)
project(app C CXX)
find_package(tutti 0.1 REQUIRED)
add_executable(collectives 02_collectives.c)
target_link_libraries(collectives PRIVATE tutti::tutti)
add_executable(all_reduce_cpp 01_all_reduce.cc)
target_link_libraries(all_reduce_cpp PRIVATE tutti::cpp)
CMAKE
    cmake -S app -B app-build -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >cmake.log 2>&1 || { cat cmake.log; fail "configure failed"; }
    cmake --build app-build >>cmake.log 2>&1 || { cat cmake.log; fail "build failed"; }
    check_collectives_output "$(tutti_launch tutti launch -n 2 --timeout 60 -- app-build/collectives 2>&1)"
    output=$(tutti_launch tutti launch -n 2 --timeout 60 -- app-build/all_reduce_cpp 2>&1) || fail "the C++ example failed: $output"
    [ -n "$output" ] || fail "the C++ example printed nothing"
    # A version the package does not satisfy is refused.
    sed -i 's/find_package(tutti 0.1 REQUIRED)/find_package(tutti 1.0 REQUIRED)/' app/CMakeLists.txt
    if cmake -S app -B app-build-1 -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >cmake1.log 2>&1; then
      fail "find_package(tutti 1.0) was satisfied by a 0.x install"
    fi
    expect_in "$(cat cmake1.log)" "tuttiConfig.cmake, version: 0.1.0"
    ;;

  pkg_config)
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    [ "$(pkg-config --modversion tutti)" = "$(tutti_launch tutti version | cut -d' ' -f2)" ] ||
      fail "pkg-config's version $(pkg-config --modversion tutti) is not the command's"
    # Relocatable: the .pc file finds the prefix from its own place.
    expect_in "$(pkg-config --cflags tutti)" "$prefix/lib/pkgconfig/../../include"
    cc "$source_dir/examples/c/02_collectives.c" $(pkg-config --cflags --libs tutti) \
       -Wl,-rpath,"$(pkg-config --variable=libdir tutti)" -o collectives
    check_collectives_output "$(tutti_launch tutti launch -n 2 --timeout 60 -- ./collectives 2>&1)"
    ;;

  python)
    site=$(echo "$prefix"/lib/python3*/dist-packages)
    [ -L "$site/tutti/libtutti.so.0" ] || fail "no libtutti.so.0 link beside the installed package"
    [ "$(readlink -f "$site/tutti/libtutti.so.0")" = "$(readlink -f "$prefix/lib/libtutti.so.0")" ] ||
      fail "the package's libtutti.so.0 is not the installed one"
    script='import numpy, tutti
tutti.init()
x = numpy.full(3, tutti.rank() + 1, dtype=numpy.float32)
tutti.all_reduce(x)
print("sum", x.tolist(), "from", tutti.__file__)'
    output=$(tutti_launch PYTHONPATH="$site" tutti launch -n 2 --timeout 60 -- /usr/bin/python3 -c "$script" 2>&1) ||
      fail "the 2-rank all_reduce failed: $output"
    expect_in "$output" "[0] sum [3.0, 3.0, 3.0] from $site/tutti/__init__.py"
    expect_in "$output" "[1] sum [3.0, 3.0, 3.0]"
    ;;

  pip)
    cp -r "$source_dir/bindings/python" package  # pip builds in the folder it is given
    /usr/bin/python3 -m venv --system-site-packages venv
    venv/bin/pip install --no-build-isolation --no-index --quiet ./package >pip.log 2>&1 || { cat pip.log; fail "pip install failed"; }
    [ "$(venv/bin/pip show tutti | sed -n 's/^Version: //p')" = "$(tutti_launch tutti version | cut -d' ' -f2)" ] ||
      fail "pyproject.toml's version is not the library's"
    script='import numpy, tutti
tutti.init()
x = numpy.ones(2)
tutti.all_reduce(x)
print("pip", x.tolist(), tutti.__file__.startswith("'"$scratch"'/venv/"))'
    # pip installs the package alone: the library comes from the system's library path.
    output=$(tutti_launch LD_LIBRARY_PATH="$prefix/lib" tutti launch -n 2 --timeout 60 -- venv/bin/python -c "$script" 2>&1) ||
      fail "the pip-installed package failed: $output"
    expect_in "$output" "[0] pip [2.0, 2.0] True"
    ;;

  lua)
    # PREFIX/lib/lua/5.4 is where lua5.4 looks for /usr and /usr/local (package.cpath);
    # a prefix elsewhere is named by LUA_CPATH, as for any Lua module.
    lua5.4 -e 'print(package.cpath)' | grep -qF "/usr/local/lib/lua/5.4/?.so" || fail "lua5.4 does not look in /usr/local/lib/lua/5.4"
    script='local t = require "tutti"
local x = t.ones{3} * (t.rank() + 1)
t.all_reduce(x)
print("lua " .. x:sum() .. " " .. t.size())'
    output=$(tutti_launch LUA_CPATH="$prefix/lib/lua/5.4/?.so" tutti launch -n 2 --timeout 60 -- lua5.4 -e "$script" 2>&1) ||
      fail "require \"tutti\" failed: $output"
    expect_in "$output" "[0] lua 9.0 2"
    # The command runs the same scripts itself.
    output=$(tutti_launch tutti run -n 2 --timeout 60 "$source_dir/examples/lua/01_all_reduce.lua" 2>&1) || fail "$output"
    expect_in "$output" "after all_reduce"
    ;;

  man)
    for page in "$prefix"/share/man/man1/tutti.1 "$prefix"/share/man/man3/tutti.3; do
      rendered=$(MANWIDTH=80 man --warnings -l "$page" 2>warnings.txt) || fail "man -l $page failed"
      [ ! -s warnings.txt ] || fail "man -l $page warns: $(cat warnings.txt)"
      expect_in "$rendered" "SEE ALSO"
    done
    expect_in "$(MANWIDTH=80 man -l "$prefix/share/man/man1/tutti.1")" "tutti launch"
    # One page per function of tutti.h, each pointing to tutti(3).
    functions=$(grep -c '^TUTTI_API ' "$source_dir/capi/include/tutti.h")
    pages=$(ls "$prefix"/share/man/man3/tutti_*.3 | wc -l)
    [ "$functions" = "$pages" ] || fail "$functions functions in tutti.h but $pages pages"
    expect_in "$(MANPATH="$prefix/share/man" man -P cat tutti_comm_init 2>/dev/null | tr -s ' ')" "tutti_comm_init joins the job"
    ;;

  relocated)
    # A prefix works wherever it is moved: every path in it is relative. This test
    # installs a prefix of its own (the shared one stays put for the others), moves it,
    # and builds and runs against it where it now is.
    build_dir=${4:?relocated needs BUILD as its fourth argument}
    cmake --install "$build_dir" --prefix "$scratch/first" >install.log || { cat install.log; fail "cmake --install failed"; }
    mv "$scratch/first" "$scratch/moved"
    mkdir app && cp "$source_dir/examples/c/02_collectives.c" app/
    printf 'cmake_minimum_required(VERSION 3.22)\nproject(app C)\nfind_package(tutti REQUIRED)\nadd_executable(c 02_collectives.c)\ntarget_link_libraries(c PRIVATE tutti::tutti)\n' >app/CMakeLists.txt
    cmake -S app -B b -G Ninja -DCMAKE_PREFIX_PATH="$scratch/moved" >cmake.log 2>&1 && cmake --build b >>cmake.log 2>&1 ||
      { cat cmake.log; fail "building against the moved prefix failed"; }
    grep -q "$scratch/moved/lib/libtutti.so" b/build.ninja || fail "the app did not link the moved prefix's library"
    check_collectives_output "$(env -i PATH="$scratch/moved/bin:/usr/bin:/bin" tutti launch -n 2 --timeout 60 -- b/c 2>&1)"
    expect_in "$(env -i PATH="$scratch/moved/bin:/usr/bin:/bin" PKG_CONFIG_PATH="$scratch/moved/lib/pkgconfig" pkg-config --libs tutti)" \
      "-L$scratch/moved/lib/pkgconfig/../../lib"
    ;;

  library_alone)
    # What a packager or embedder who wants only the library has: a pkg-config world
    # with libuv and UCX and nothing else (no Lua, libpng, libedit,
    # Criterion, PMIx). Configure must leave every optional part out, each with one
    # line naming what was missing, and still make the library and the command.
    mkdir pc
    for module in libuv ucx ucx-uct ucx-ucs; do
      cp "$(pkg-config --variable=pcfiledir "$module")/$module.pc" pc/
    done
    PKG_CONFIG_LIBDIR="$scratch/pc" cmake -S "$source_dir" -B alone -G Ninja \
      >configure.log 2>&1 || { cat configure.log; fail "configure with only libuv and UCX failed"; }
    log=$(cat configure.log)
    expect_in "$log" "tutti: the Lua module OFF (not found: lua5.4 (liblua5.4-dev), libpng (libpng-dev);"
    expect_in "$log" "tutti: the Lua REPL and script runner OFF (not found: the Lua module, libedit (libedit-dev);"
    expect_in "$log" "tutti: the tests OFF (not found: Criterion (libcriterion-dev), the Lua module, the REPL;"
    expect_in "$log" "tutti: PMIx OFF"
    targets=$(ninja -C alone -t targets all)
    for target in lib/libtutti.so bin/tutti; do
      grep -q "^$target:" <<<"$targets" || fail "the library-only build has no $target"
    done
    ! grep -qE "lua5\.4|libpng|-lpng|libedit|-ledit|criterion" alone/build.ninja || fail "the library-only build still uses Lua, libpng, libedit or Criterion"
    # Asking for a part whose dependency is missing is an error that says what to do.
    if PKG_CONFIG_LIBDIR="$scratch/pc" cmake -S "$source_dir" -B alone-lua -G Ninja -DTUTTI_BUILD_LUA=ON >lua.log 2>&1; then
      fail "TUTTI_BUILD_LUA=ON configured without lua5.4"
    fi
    expect_in "$(tr -s ' \n' ' ' <lua.log)" "TUTTI_BUILD_LUA=ON but the Lua module needs what was not found: lua5.4"
    ;;

  *)
    echo "usage: test_install.sh install|cmake_package|pkg_config|python|pip|lua|man|relocated|library_alone SOURCE PREFIX" >&2
    exit 2
    ;;
esac
echo "test_install $what: ok"
