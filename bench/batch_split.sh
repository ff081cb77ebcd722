#!/usr/bin/env bash
# Heterogeneous data-parallel on CPU ranks of unequal speed: 3 ranks on 2 cores, rank 0 alone on
# core 0 and ranks 1 and 2 sharing core 1 (taskset per rank, chosen by its rank number, 1 OpenMP
# thread each). Runs the same job with distributed.batch_split: equal and throughput, alternating,
# REPETITIONS times each, and prints per run: overall img/s (summary.json, warm-up excluded), the
# median step time of each rank, the split chosen and the probe's start-up seconds; then the
# medians, and the throughput/equal ratio of the medians and within each back-to-back pair.
#
#   bench/batch_split.sh PHALANX CONFIG.yaml WORK_DIR [REPETITIONS] [--set key=value ...]
#
# Needs /usr/bin/python3 (json) and taskset.
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,11p' "$0"; exit 2; }
phalanx=$1 config=$2 work=$3 repetitions=${4:-3}
shift $(($# >= 4 ? 4 : 3))
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
mkdir -p "$work"
run() {  # run SPLIT DIRECTORY
  local split=$1 directory=$2 arguments=(train "$config" --run-dir "$2" --set "distributed.batch_split=$1" "${@:3}")
  rm -rf "$directory"
  # One command for all ranks, not an MPMD line (`-np 1 A : -np 2 B`): Debian 13's Open MPI 5.0.7
  # mpirun crashes on those (open-mpi/ompi#13303).
  # shellcheck disable=SC2016  # expanded by each rank's sh
  mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 3 \
    sh -c 'exec taskset -c $((OMPI_COMM_WORLD_RANK == 0 ? 0 : 1)) "$@"' rank "$phalanx" "${arguments[@]}" \
    >"$directory.log" 2>&1
}
for repetition in $(seq "$repetitions"); do
  for split in equal throughput; do
    run "$split" "$work/$split-$repetition" "$@"
  done
done
/usr/bin/python3 - "$work" "$repetitions" <<'PYTHON'
import json, statistics, sys
work, repetitions = sys.argv[1], int(sys.argv[2])
rates = {}
for split in ("equal", "throughput"):
    for repetition in range(1, repetitions + 1):
        with open(f"{work}/{split}-{repetition}/summary.json") as stream:
            summary = json.load(stream)
        chosen = summary["batch_split"]
        steps = [rank["step_time_ms"]["p50_ms"] for rank in summary["ranks"]]
        rates.setdefault(split, []).append(summary["images_per_sec"])
        print(f"{split:10s} run {repetition}: {summary['images_per_sec']:7.0f} img/s, step p50 "
              f"{' / '.join(f'{ms:.1f}' for ms in steps)} ms, split {chosen['local_batches']}"
              + (f" from {[round(rate) for rate in chosen['images_per_sec']]} img/s, probe "
                 f"{chosen['probe_seconds']:.2f} s" if "images_per_sec" in chosen else ""))
equal, throughput = statistics.median(rates["equal"]), statistics.median(rates["throughput"])
# Each repetition runs the two back to back: the ratio within a pair sees the same machine load.
pairs = [fast / slow for fast, slow in zip(rates["throughput"], rates["equal"])]
print(f"median img/s: equal {equal:.0f}, throughput {throughput:.0f}, ratio of medians {throughput / equal:.2f}; "
      f"per-pair ratios {' '.join(f'{ratio:.2f}' for ratio in pairs)}, median {statistics.median(pairs):.2f}")
PYTHON
