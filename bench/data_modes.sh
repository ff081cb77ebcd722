#!/usr/bin/env bash
# Loader throughput (images/s per rank) and node memory for data.cache rank | node | none with 1, 2
# and 4 ranks, on a synthetic 3x32x32 dataset of about 2 GB and a 3x224x224 one of about 3 GB
# (streamed only: larger than the cache budget the benchmark assumes), plus read throughput per
# compression option on Fashion-MNIST (real images; random synthetic bytes barely compress). The files are made here (they never enter the repository).
#   bench/data_modes.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build/bench-out/data-modes}
phalanx=${PHALANX_BIN:-build/src/phalanx}
bench=${PHALANX_BENCH_DATA_MODES:-build/bench/phalanx_bench_data_modes}
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
small="$work/synth-32-2gb.h5"
large="$work/synth-224-3gb.h5"
[ -f "$small" ] || "$phalanx" data synth -o "$small" --train 680000 --test 256 --height 32 --width 32 --channels 3 --chunk 1024
[ -f "$large" ] || "$phalanx" data synth -o "$large" --train 20000 --test 64 --height 224 --width 224 --channels 3 --chunk 64
run() { mpirun --oversubscribe --bind-to none -np "$@"; }
echo "== 3x32x32, 2 GB, batch 256, 1000 batches per rank"
for ranks in 1 2 4; do
  for cache in rank node none; do
    run "$ranks" "$bench" "$small" --cache "$cache" --batch 256 --batches 1000
  done
done
echo "== 3x224x224, 3 GB, streamed (data.cache: none), batch 32, 300 batches per rank"
for ranks in 1 2 4; do
  run "$ranks" "$bench" "$large" --cache none --batch 32 --batches 300 --window-mb 256
done
echo "== read throughput per compression (Fashion-MNIST train, 60000 x 28x28, chunk 1024), 1 rank streaming 3 epochs"
for option in none gzip1 gzip4 lzf; do
  file="$work/fashion-$option.h5"
  case $option in
    none) flags=() ;; gzip1) flags=(--gzip 1) ;; gzip4) flags=(--gzip 4) ;; lzf) flags=(--lzf) ;;
  esac
  if [ ! -f "$file" ] && ! "$phalanx" data import-idx /usr/share/datasets/fashion-mnist -o "$file" --classes fashion \
    --chunk 1024 "${flags[@]}" >/dev/null; then
    echo "$option: not available here (see the message above)"
    continue
  fi
  printf "%s: %s bytes on disk; " "$option" "$(stat -c %s "$file")"
  run 1 "$bench" "$file" --cache none --batch 256 --batches 702 | head -1
done
echo "== what training consumes: resnet20, 2 ranks x 1 thread, streaming (data.cache: none)"
for setting in "$small 64 40" "$large 8 8"; do
  set -- $setting
  run_dir="$work/train-$(basename "$1" .h5)"
  rm -rf "$run_dir"
  run 2 -x OMP_NUM_THREADS=1 "$phalanx" train configs/resnet20_synth.yaml --set data.path="$1" --set data.cache=none \
    --set train.batch_size="$2" --set train.max_steps="$3" --set checkpoint.every_steps=0 --run-dir "$run_dir" \
    >"$run_dir.log" 2>&1
  /usr/bin/python3 - "$run_dir" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1] + "/summary.json"))
breakdown = summary["time_breakdown"]
print(f"{sys.argv[1]}: {summary['images_per_sec'] / summary['world_size']:.1f} img/s per rank, step "
      f"{breakdown['step_ms']:.1f} ms, data wait {breakdown['data_wait']['ms_per_step']:.3f} ms "
      f"({100 * breakdown['data_wait']['share']:.3f}% of the step)")
PY
done
