#!/usr/bin/env bash
# Builds tutti with CUDA here, for a GPU machine that has CUDA, NCCL and PyTorch but
# none of tutti's other libraries (libuv, UCX, Lua, ...), and cannot install them:
#   scripts/gpu-bundle.sh            # into build-gpu/, then copy the repository there
#   (on the GPU machine)  scripts/gpu-check.sh
# Needs the CUDA toolkit with NCCL's headers here (/usr/local/cuda), not a GPU. The
# build is Release (-O3), of what the GPU checks run: libtutti, the tutti CLI, the GPU
# tests and their programs, the collective matrix's test and program, tutti-bench,
# nccl-bench and the Python package. The shared
# libraries they load that a bare machine lacks go to BUILD_DIR/bundled (UCX's
# transport modules to bundled/ucx, where libucs looks for them); glibc, libstdc++ and
# libgcc_s stay the machine's own, and so does NCCL (PyTorch's wheel brings one).
# BUILD_DIR/gpu-env.sh, sourced there, puts both on the loader's path.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR="${BUILD_DIR:-build-gpu}"

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUTTI_FUZZ=OFF >/dev/null
# grep reads the whole list: with -q it could stop early, and under pipefail ninja's
# SIGPIPE would fail the test.
ninja -C "$BUILD_DIR" -t targets all | grep '^nccl_bench:' >/dev/null ||
  { echo "scripts/gpu-bundle.sh: CMake found no CUDA toolkit with NCCL here; see docs/gpu.md" >&2; exit 1; }
targets=(tutti tutti_cli tutti_python tutti_bench nccl_bench gpu.test_collectives gpu.test_streams gpu.test_timeouts
         multiproc.test_collectives coll_check)
cmake --build "$BUILD_DIR" -j2 --target "${targets[@]}"

bundled="$BUILD_DIR/bundled"
rm -rf "$bundled"
mkdir -p "$bundled/ucx"
binaries=("$BUILD_DIR"/lib/libtutti.so "$BUILD_DIR"/bin/{tutti,tutti-bench,nccl-bench}
          "$BUILD_DIR"/tests/programs/{gpu_*,coll_check} "$BUILD_DIR"/tests/gpu/gpu.test_*
          "$BUILD_DIR"/tests/multiproc.test_collectives)
{ ldd "${binaries[@]}" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libnccl|libtutti)\.so' |
  xargs -r cp -L -t "$bundled"
ucx_modules="$(dirname "$(ldd "$BUILD_DIR/lib/libtutti.so" | awk '/libucs\.so/ {print $3}')")/ucx"
cp -L "$ucx_modules"/libuct_cma.so.0 "$bundled/ucx/"

cat >"$BUILD_DIR/gpu-env.sh" <<EOF
# Sourced on the GPU machine from the repository's root (scripts/gpu-check.sh does).
# The build's tests find their programs by the absolute path they were built at:
# where the repository lies elsewhere, that path becomes a link to it.
built_at=$PWD
if [ "\$PWD" != "\$built_at" ] && [ ! -e "\$built_at" ]; then
  mkdir -p "\$(dirname "\$built_at")" && ln -s "\$PWD" "\$built_at"
fi
nccl_lib=\$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))" 2>/dev/null || true)
export LD_LIBRARY_PATH=\$built_at/$bundled\${nccl_lib:+:\$nccl_lib}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=\$built_at/$BUILD_DIR/bin:\$PATH
EOF
echo "scripts/gpu-bundle.sh: $BUILD_DIR is ready ($(du -sh "$BUILD_DIR" | cut -f1)); on the GPU machine run scripts/gpu-check.sh"
