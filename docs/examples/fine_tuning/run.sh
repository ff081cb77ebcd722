#!/usr/bin/env bash
# Reproduces the fine-tuning example of docs/FINE_TUNING.md end to end: the data, the PyTorch
# source model, its import, three phalanx fine-tunings with the same budget, and the export back.
#
# Usage: docs/examples/fine_tuning/run.sh VENV [WORK_DIR]
#   VENV      a Python virtual environment with torch, torchvision, safetensors, h5py, numpy, Pillow
#   WORK_DIR  where everything is written (default runs/fine_tuning)
# Environment: PHALANX (default build/src/phalanx), IDX (the Fashion-MNIST IDX folder, default
# /usr/share/datasets/fashion-mnist), RANKS (default 2), SOURCE_EPOCHS (default 1), EPOCHS (the
# fine-tuning epochs, default 4), PARALLEL=1 to run the three fine-tunings at the same time.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  sed -n '5,10p' "$0" >&2
  exit 2
fi
venv_python="$(cd "$1" && pwd)/bin/python"
here="$(cd "$(dirname "$0")" && pwd)"
repository="$(cd "$here/../../.." && pwd)"
phalanx="$(realpath "${PHALANX:-$repository/build/src/phalanx}")"
idx="$(realpath "${IDX:-/usr/share/datasets/fashion-mnist}")"
ranks="${RANKS:-2}"
work="${2:-runs/fine_tuning}"
mkdir -p "$work"
cd "$work"

mpi=(mpirun -np "$ranks" --map-by slot:PE=1 -x OMP_NUM_THREADS=1)
if [[ "$(id -u)" == 0 ]]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
if (( ranks > $(nproc) )) || [[ "${PARALLEL:-0}" == 1 ]]; then
  mpi+=(--oversubscribe)
fi

echo "== data: Fashion-MNIST at 32x32, grey replicated to RGB"
"$venv_python" "$here/make_data.py" "$idx" arrays.h5
cp "$here/target_source.yaml" "$here/fine_tune.yaml" .
"$phalanx" data import-hdf5 target_source.yaml -o fmnist32rgb.h5

echo "== PyTorch: torchvision mobilenet_v2 on the source task (classes 0-4)"
"$venv_python" "$here/pretrain_source.py" arrays.h5 source_mobilenet_v2.safetensors \
  --epochs "${SOURCE_EPOCHS:-1}"

echo "== import into a phalanx checkpoint (5-class head, as trained)"
"$phalanx" checkpoint import source_mobilenet_v2.safetensors --preset mobilenet_v2 \
  --input 32x32x3 --data fmnist32rgb.h5 -o source_mobilenet_v2.h5
"$phalanx" checkpoint verify source_mobilenet_v2.h5

echo "== phalanx: fine-tune, fine-tune with the first blocks frozen, from scratch"
epochs=(--set "train.epochs=${EPOCHS:-4}")
frozen='train.freeze=[features.0, features.1, features.2, features.3, features.4, features.5, features.6]'
train() { "${mpi[@]}" "$phalanx" train fine_tune.yaml "${epochs[@]}" "$@"; }
if [[ "${PARALLEL:-0}" == 1 ]]; then
  train --run-dir fine_tuned > fine_tuned.log 2>&1 &
  train --set "$frozen" --run-dir fine_tuned_frozen > fine_tuned_frozen.log 2>&1 &
  train --set model.init_from= --run-dir from_scratch > from_scratch.log 2>&1 &
  wait
  tail -n 3 fine_tuned.log fine_tuned_frozen.log from_scratch.log
else
  train --run-dir fine_tuned
  train --set "$frozen" --run-dir fine_tuned_frozen
  train --set model.init_from= --run-dir from_scratch
fi

echo "== export the fine-tuned model back to PyTorch and evaluate it there"
"$phalanx" checkpoint export fine_tuned/checkpoints/latest.h5 fine_tuned_mobilenet_v2.safetensors
"$phalanx" eval --checkpoint fine_tuned/checkpoints/latest.h5
"$venv_python" "$here/check_export.py" fine_tuned_mobilenet_v2.safetensors fmnist32rgb.h5

echo "== test accuracy (summary.json)"
for run in fine_tuned fine_tuned_frozen from_scratch; do
  "$venv_python" -c "import json, sys; s = json.load(open(sys.argv[1] + '/summary.json')); \
print(f\"{sys.argv[1]:18} test accuracy {s['test_accuracy']:.4f}\")" "$run"
done
