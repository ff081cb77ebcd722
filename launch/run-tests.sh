#!/usr/bin/env bash
# The whole test suite (unit, MPI, end-to-end) from a fresh machine: installs what is missing,
# builds with CUDA when the toolkit is there (GPU tests skip without a GPU), runs CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
launch/install-dependencies.sh
PHALANX_BUILD_DIR=${PHALANX_BUILD_DIR:-build} launch/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${PHALANX_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
