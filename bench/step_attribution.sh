#!/usr/bin/env bash
# Where a 2-rank CPU step's time goes that no compute stage explains: runs the same job with two
# phalanx binaries (e.g. before and after a change to the breakdown), alternating which goes
# first, ROUNDS times, each run with LOAD busy processes (unbound single-thread spin loops, the
# stand-in for a loaded machine; 0: none) beside `mpirun -np 2 --map-by slot:PE=1` with one
# OpenMP thread per rank. Prints per run and rank the mean ms per step of `other`, `sync_wait`
# (absent in binaries that predate it: "-"), the exposed all-reduce and the step, then the
# medians per binary and rank, and whether the two runs of a round trained the same bits (every
# logged loss, the test loss and the final checkpoint's weights equal).
#
#   bench/step_attribution.sh PHALANX_A PHALANX_B CONFIG.yaml WORK_DIR [ROUNDS] [LOAD] [--set key=value ...]
#
# Needs /usr/bin/python3 (json, h5py, numpy).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,12p' "$0"; exit 2; }
first=$1 second=$2 config=$3 work=$4 rounds=${5:-3} load=${6:-0}
shift $(($# >= 6 ? 6 : $#))
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
mkdir -p "$work"
spinners=()
stop_spinners() {
  for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${spinners[@]}"; do wait "$pid" 2>/dev/null || true; done
  spinners=()
}
trap stop_spinners EXIT
run() {  # run PHALANX DIRECTORY [--set ...]
  local phalanx=$1 directory=$2
  shift 2
  rm -rf "$directory"
  for _ in $(seq "$load"); do
    /usr/bin/python3 -c 'while True: pass' &
    spinners+=($!)
  done
  mpirun -np 2 --map-by slot:PE=1 -x OMP_NUM_THREADS=1 \
    "$phalanx" train "$config" --run-dir "$directory" "$@" >"$directory.log" 2>&1
  stop_spinners
}
for round in $(seq "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then order=(a b); else order=(b a); fi
  for which in "${order[@]}"; do
    if [ "$which" = a ]; then phalanx=$first; else phalanx=$second; fi
    run "$phalanx" "$work/$which-$round" "$@"
  done
done
/usr/bin/python3 - "$work" "$rounds" "$load" <<'PYTHON'
import json, statistics, sys
import h5py, numpy
work, rounds, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
columns = ("other", "sync_wait", "allreduce_wait")

def ms(breakdown, stage):
    return breakdown[stage]["ms_per_step"] if stage in breakdown else None

def text(value):
    return "-" if value is None else f"{value:.2f}"

def losses(directory):
    with open(f"{directory}/metrics.jsonl") as stream:
        events = [json.loads(line) for line in stream if line.strip()]
    return [(event["step"], event["loss"]) for event in events if event["event"] == "step"]

def weights(directory):
    with h5py.File(f"{directory}/checkpoints/latest.h5", "r") as file:
        arrays = {}
        file["model"].visititems(lambda name, item: arrays.__setitem__(name, item[()])
                                 if isinstance(item, h5py.Dataset) else None)
        return arrays

values = {}
print(f"load: {load} spinning processes; ms per step, mean over the run")
print("run     rank   other   sync_wait  allreduce_wait  step_ms  images/s")
for round in range(1, rounds + 1):
    for which in ("a", "b"):
        directory = f"{work}/{which}-{round}"
        with open(f"{directory}/summary.json") as stream:
            summary = json.load(stream)
        for entry in summary["ranks"]:
            breakdown = entry["time_breakdown"]
            row = [ms(breakdown, stage) for stage in columns] + [breakdown["step_ms"]]
            for name, value in zip(columns + ("step_ms",), row):
                if value is not None:
                    values.setdefault((which, entry["rank"], name), []).append(value)
            print(f"{which}-{round:<4} {entry['rank']:>4}  " + "  ".join(f"{text(value):>9}" for value in row) +
                  f"  {summary['images_per_sec']:8.0f}")
        values.setdefault((which, "images_per_sec"), []).append(summary["images_per_sec"])
    a, b = f"{work}/a-{round}", f"{work}/b-{round}"
    same_losses = losses(a) == losses(b)
    with open(f"{a}/summary.json") as one, open(f"{b}/summary.json") as other:
        same_test = json.load(one)["test_loss"] == json.load(other)["test_loss"]
    first, second = weights(a), weights(b)
    same_weights = first.keys() == second.keys() and all(numpy.array_equal(first[key], second[key]) for key in first)
    print(f"round {round}: logged losses equal {same_losses}, test loss equal {same_test}, "
          f"final weights bitwise equal {same_weights}")
print("medians over the rounds")
for which in ("a", "b"):
    for rank in (0, 1):
        print(f"{which} rank {rank}: " + ", ".join(
            f"{name} {statistics.median(values[(which, rank, name)]):.2f}"
            for name in columns + ("step_ms",) if (which, rank, name) in values))
    print(f"{which} images/s {statistics.median(values[(which, 'images_per_sec')]):.0f}")
PYTHON
