#!/usr/bin/env bash
# The sanitizer and fuzzer set (docs/HARDENING.md), CPU builds beside the normal one:
#   launch/sanitize.sh asan-ci     ASan+UBSan: the modules whose unit tests ran clean so far (core,
#                                  config, data, comm, monitor) and every fuzz target's replay (what
#                                  .ci/run runs: it fits CI's time)
#   launch/sanitize.sh asan-unit   ASan+UBSan: every unit and MPI test
#   launch/sanitize.sh asan        the same plus the end-to-end tests against an ASan+UBSan phalanx
#   launch/sanitize.sh tsan        TSan: the threaded parts (loader, streaming reads, watchdog, step
#                                  ring, samplers, stop requests, sweep dispatch), the MPI tests, and
#                                  end-to-end runs of the sweep coordinator, stop signals and watchdog
#   launch/sanitize.sh fuzz        clang + libFuzzer: every fuzz target for PHALANX_FUZZ_SECONDS
#                                  (default 10) on its corpus and past findings, at nice 19
#   launch/sanitize.sh all         all four, in that order
# Build folders: build-asan, build-tsan, build-fuzz (PHALANX_SANITIZE_PREFIX changes "build").
# Extra arguments go to cmake's configure step (e.g. -DCMAKE_CXX_COMPILER_LAUNCHER=ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-all}
shift || true
prefix=${PHALANX_SANITIZE_PREFIX:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
jobs=$(nproc)
# Every sanitizer build at -O1 (the CPU backend keeps its own -O3): it compiles in about half the
# time of -O3, the reports do not need more, and asan-ci, asan-unit and asan share build-asan
# without rebuilding it between them.
optimize="-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
unit_targets="phalanx_core_tests phalanx_config_tests phalanx_backend_tests phalanx_data_tests phalanx_nn_tests
  phalanx_optim_tests phalanx_train_tests phalanx_comm_tests phalanx_monitor_tests phalanx_report_tests
  phalanx_sweep_tests phalanx_parity_tests phalanx_mpi_tests phalanx_mpi_data_tests phalanx_fuzz_config
  phalanx_fuzz_sweep_file phalanx_fuzz_dataset phalanx_fuzz_checkpoint phalanx_fuzz_safetensors
  phalanx_fuzz_mapped_source phalanx_fuzz_idx phalanx_fuzz_cifar
  phalanx_fuzz_image"

asan() {  # $1: also the end-to-end tests
  local targets=$unit_targets exclude="end_to_end|fuzz"
  if [ "$1" = 1 ]; then targets="$targets phalanx"; exclude="fuzz"; fi
  PHALANX_BUILD_DIR=$prefix-asan PHALANX_TARGETS="$targets" launch/build.sh \
    -DPHALANX_SANITIZE=address,undefined -DPHALANX_CUDA=OFF -DPHALANX_BENCH=OFF "$optimize" "$@"
  # -LE, not -L: CTest does not see the labels of GoogleTest cases discovered at test time.
  ctest --test-dir "$prefix-asan" --output-on-failure -j "$jobs" -LE "$exclude"
}

# CI's share, at -O1 (it compiled in 222 s against 384 s at -O3 here, and the reports do not need
# it): no oneDNN-, trainer- or MPI-test binaries (the normal suite covers those; the
# whole set is asan-unit). The GoogleTest binaries not built register *_NOT_BUILT placeholders.
# Every fuzz target's replay is in it: the checkpoint one builds the trainer and CPU backend
# libraries for its loader (88 of the 224 compile steps; docs/HARDENING.md, "Cost in CI").
asan_ci() {
  PHALANX_BUILD_DIR=$prefix-asan PHALANX_TARGETS="phalanx_core_tests phalanx_config_tests phalanx_data_tests
    phalanx_comm_tests phalanx_monitor_tests phalanx_fuzz_config phalanx_fuzz_sweep_file phalanx_fuzz_dataset
    phalanx_fuzz_checkpoint phalanx_fuzz_safetensors phalanx_fuzz_mapped_source phalanx_fuzz_idx phalanx_fuzz_cifar phalanx_fuzz_image" \
    launch/build.sh \
    -DPHALANX_SANITIZE=address,undefined -DPHALANX_CUDA=OFF -DPHALANX_BENCH=OFF "$optimize" "$@"
  # CpuBf16Isa and ArithmeticSetupIsa rerun the backend and train test binaries (not built here)
  # under another oneDNN ISA: plain add_test entries, so no *_NOT_BUILT placeholder stands for them.
  ctest --test-dir "$prefix-asan" --output-on-failure -j "$jobs" -LE "end_to_end|fuzz" \
    -E "_NOT_BUILT|CpuBf16Isa|ArithmeticSetupIsa|^Mpi(Data)?Tests\."
}

# TSan: the unit tests of the threaded parts, the MPI tests (the trainer's loader thread, watchdog
# and trace clock rounds on MPI_THREAD_MULTIPLE), then the end-to-end tests of the parts that only
# the binary runs: the sweep coordinator thread beside rank 0's trial, stop signals, the watchdog
# naming a stalled rank. OMP_NUM_THREADS=1 (CTest sets it; the end-to-end runs get it here):
# OpenMP's runtime and oneDNN are not instrumented, and their thread pools would be reported.
tsan() {
  PHALANX_BUILD_DIR=$prefix-tsan PHALANX_TARGETS="phalanx_data_tests phalanx_comm_tests phalanx_monitor_tests
    phalanx_train_tests phalanx_sweep_tests phalanx_mpi_tests phalanx_mpi_data_tests phalanx" launch/build.sh \
    -DPHALANX_SANITIZE=thread -DPHALANX_CUDA=OFF -DPHALANX_BENCH=OFF "$optimize" "$@"
  ctest --test-dir "$prefix-tsan" --output-on-failure -j "$jobs" \
    -R 'Loader|Streaming|NodeCache|Watchdog|StepRing|Sampler|PeriodicThread|StopRequest|Dispatch|MpiTests|MpiDataTests'
  local work=${TMPDIR:-/tmp}/phalanx-tsan-e2e
  for test in "test_sweep SweepTest.test_four_rank_sweep_is_consistent_and_follows_asha" \
              "test_sweep SweepTest.test_signal_mid_sweep_stops_with_75_and_resumes" \
              "test_preemption" "test_failures FailureTest.test_stalled_rank_is_named_by_the_watchdog"; do
    set -- $test
    OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp" \
      OMPI_MCA_mca_base_component_disable_dlclose=1 PHALANX_E2E_WORK=$work PHALANX_SOURCE_DIR=$PWD \
      /usr/bin/python3 -B "tests/end_to_end/$1.py" "$PWD/$prefix-tsan/src/phalanx" "$(command -v mpiexec)" ${2:-}
  done
}

fuzz() {
  PHALANX_WITH_FUZZ=1 launch/install-dependencies.sh
  PHALANX_BUILD_DIR=$prefix-fuzz PHALANX_TARGETS="phalanx_fuzz_config phalanx_fuzz_sweep_file phalanx_fuzz_dataset
    phalanx_fuzz_checkpoint phalanx_fuzz_safetensors phalanx_fuzz_mapped_source phalanx_fuzz_idx phalanx_fuzz_cifar phalanx_fuzz_image" \
    launch/build.sh -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DPHALANX_FUZZ=ON -DPHALANX_CUDA=OFF \
    -DPHALANX_BENCH=OFF -DPHALANX_FUZZ_SECONDS="${PHALANX_FUZZ_SECONDS:-10}" "$optimize" "$@"
  # At the lowest priority: a fuzzer takes a whole core for as long as it is told to.
  nice -n 19 ctest --test-dir "$prefix-fuzz" --output-on-failure -j "$jobs" -L fuzz
}

case $stage in
  asan-ci) asan_ci "$@" ;;
  asan-unit) asan 0 "$@" ;;
  asan) asan 1 "$@" ;;
  tsan) tsan "$@" ;;
  fuzz) fuzz "$@" ;;
  all) asan 1 "$@"; tsan "$@"; fuzz "$@" ;;
  *) echo "usage: launch/sanitize.sh [asan-ci|asan-unit|asan|tsan|fuzz|all] [cmake arguments]" >&2; exit 2 ;;
esac
