#!/usr/bin/env bash
# The whole test suite (unit, MPI, end-to-end) from a fresh machine: installs what is missing,
# builds with CUDA when the toolkit is there (GPU tests skip without a GPU), runs CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
launch/install-dependencies.sh
PHALANX_BUILD_DIR=${PHALANX_BUILD_DIR:-build} launch/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One more test at a time than cores: the Slurm test, which mostly waits on the scheduler, runs
# beside two end-to-end tests (tests/end_to_end/CMakeLists.txt says which two may share the cores).
ctest --test-dir "${PHALANX_BUILD_DIR:-build}" --output-on-failure -j "$(($(nproc) + 1))" "$@"
# The other HDF5 flavour (parallel HDF5: cache fills read with collective MPI-IO): only the data
# module and its tests, a few minutes on 2 cores.
if [ -z "${PHALANX_SKIP_HDF5_MPI:-}" ]; then
  PHALANX_BUILD_DIR=build-hdf5-mpi PHALANX_TARGETS="phalanx_data_tests phalanx_mpi_data_tests" \
    launch/build.sh -DPHALANX_HDF5=MPI -DPHALANX_CUDA=OFF -DPHALANX_BENCH=OFF
  build-hdf5-mpi/tests/phalanx_data_tests
  mpiexec -n 4 --oversubscribe --bind-to none build-hdf5-mpi/tests/mpi/phalanx_mpi_data_tests
fi
