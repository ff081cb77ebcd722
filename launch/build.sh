#!/usr/bin/env bash
# Configures and builds phalanx into ${PHALANX_BUILD_DIR:-build} (Release); everything, or only
# the targets in $PHALANX_TARGETS. Extra arguments go to cmake's configure step, e.g.
# -DPHALANX_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PHALANX_BUILD_DIR:-build}
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then export PATH=/usr/local/cuda/bin:$PATH; fi
mkdir -p "$(dirname "$build_dir")"  # the configure log goes beside the build folder
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$build_dir.configure.log" 2>&1 ||
  { cat "$build_dir.configure.log"; exit 1; }
grep -E "phalanx:" "$build_dir.configure.log" || true
# PHALANX_TARGETS narrows the build (the quick start needs only the phalanx binary).
targets=()
for target in ${PHALANX_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$(nproc)" ${targets[@]+"${targets[@]}"}
