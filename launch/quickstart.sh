#!/usr/bin/env bash
# The main job from a fresh machine: install what is missing, build, import Fashion-MNIST into
# datasets/fashion-mnist.h5, then train the default CNN with mpirun over ${RANKS:-2} ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
launch/install-dependencies.sh --main-job
PHALANX_TARGETS=phalanx launch/build.sh
if [ ! -f datasets/fashion-mnist.h5 ]; then
  build/src/phalanx data import-idx /usr/share/datasets/fashion-mnist -o datasets/fashion-mnist.h5 --classes fashion
fi
# Open MPI refuses root unless told; one OpenMP thread per rank and one core each.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI gives ranks a pseudo-terminal whatever mpirun writes to: tell phalanx what it is.
if [ -t 1 ]; then export PHALANX_PROGRESS=bar; else export PHALANX_PROGRESS=lines; fi
ranks=${RANKS:-2}
# mpirun's PE counts physical cores; the OpenMP threads take every hardware thread of them.
hardware_threads=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
cores=$(launch/phalanx-physical-cores || echo "$hardware_threads")
per_rank=$(( cores / ranks > 0 ? cores / ranks : 1 ))
threads=$(( hardware_threads / ranks > 0 ? hardware_threads / ranks : 1 ))
oversubscribe=()
if [ "$ranks" -gt "$cores" ]; then oversubscribe=(--oversubscribe); fi
time mpirun -np "$ranks" ${oversubscribe[@]+"${oversubscribe[@]}"} --map-by "slot:PE=$per_rank" \
  -x OMP_NUM_THREADS="$threads" -x PHALANX_PROGRESS build/src/phalanx train configs/fashion_mnist.yaml "$@"
