#!/usr/bin/env bash
# The whole tree (program, tests, benchmarks) built with clang into ${PHALANX_BUILD_DIR:-build-clang},
# then its unit and MPI tests: the compilers of Cray, AMD and Intel systems are LLVM-based, and
# clang refuses code GCC takes (and the other way round). A CPU build unless told otherwise; extra
# arguments go to cmake's configure step, e.g. -DPHALANX_CUDA=AUTO (the CUDA backend's C++ compiled
# by clang, its .cu files by nvcc with nvcc's own host compiler) or
# -DCMAKE_CXX_COMPILER_LAUNCHER=ccache. Its cost from an empty folder without ccache, 2 cores:
# 15.6 CPU-minutes of compiling (382 steps; `launch/sanitize.sh asan-ci`, 20.4 beside it), tests 14 s.
set -euo pipefail
cd "$(dirname "$0")/.."
PHALANX_WITH_CLANG=1 launch/install-dependencies.sh
build_dir=${PHALANX_BUILD_DIR:-build-clang}
PHALANX_BUILD_DIR=$build_dir launch/build.sh -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DPHALANX_CUDA=OFF "$@"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE end_to_end
