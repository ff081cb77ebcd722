#!/usr/bin/env bash
# Accuracy of streaming (data.cache: none, chunk-window shuffle) against the full permutation
# (data.cache: rank) on Fashion-MNIST: the default fmnist_cnn job for EPOCHS epochs on 2 ranks,
# per seed; the worst realistic window (one 1024-sample chunk, data.stream_window_mb: 1) and the
# default one (256 MB: a rank's whole part). Prints one line per run and writes results.tsv.
#   bench/stream_accuracy.sh [WORK_DIR] [EPOCHS] [SEEDS...]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build/bench-out/stream-accuracy}
epochs=${2:-3}
shift 2 2>/dev/null || true
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2)
phalanx=${PHALANX_BIN:-build/src/phalanx}
mkdir -p "$work"
data="$work/fashion-mnist.h5"
[ -f "$data" ] || "$phalanx" data import-idx /usr/share/datasets/fashion-mnist -o "$data" --classes fashion >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
printf "mode\twindow_mb\tseed\ttest_accuracy\ttest_loss\twall_s\n" >"$work/results.tsv"
for seed in "${seeds[@]}"; do
  for setting in "rank 256" "none 1" "none 256"; do
    set -- $setting
    run="$work/$1-w$2-s$seed"
    rm -rf "$run"
    mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 "$phalanx" train configs/fashion_mnist.yaml \
      --set data.path="$data" --set data.cache="$1" --set data.stream_window_mb="$2" --set seed="$seed" \
      --set train.epochs="$epochs" --set checkpoint.every_steps=0 --run-dir "$run" >"$run.log" 2>&1
    /usr/bin/python3 - "$run" "$1" "$2" "$seed" >>"$work/results.tsv" <<'PY'
import json, sys
run, mode, window, seed = sys.argv[1:]
summary = json.load(open(f"{run}/summary.json"))
print(f"{mode}\t{window}\t{seed}\t{summary['test_accuracy']:.4f}\t{summary['test_loss']:.4f}\t{summary['wall_seconds']:.1f}")
PY
    tail -1 "$work/results.tsv"
  done
done
