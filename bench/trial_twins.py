#!/usr/bin/env python3
"""One sweep trial at fixed hyperparameters, trained in phalanx and in its PyTorch twin over several
seeds: does a sweep's best differ because the two search differently, or because the same trial
trains to another accuracy? (docs/BENCHMARKS.md, "Sweeps: random+ASHA, TPE+ASHA and PBT against
Optuna's TPE").

Both sides train what a sweep trial trains to the sweep's budget.max: phalanx runs
`phalanx train` on the sweep's base config with the sweep's `set:` overrides, train.epochs =
budget.max, the given values and seed=S on one rank of one thread; PyTorch runs the objective of
bench/optuna_peer.py (the twin the Optuna peer trains) as a fixed trial numbered S, in the venv's
python. Each reports the test accuracy after the last epoch.

    /usr/bin/python3 bench/trial_twins.py --phalanx build/src/phalanx --data datasets/fashion-mnist.h5 \\
        --seeds 1 2 3 4 5 --value optimizer.learning_rate=0.003 --value optimizer.weight_decay=0.0001 \\
        --value train.batch_size=64 --value model.preset=fmnist_cnn configs/sweeps/fmnist_asha.yaml

Accuracy only: the two sides' times are not comparable here (run them with bench/cpu_vs_torch.py).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The twin, run in the venv's python: optuna_peer's objective on a fixed trial.
TORCH_TRIAL = r"""
import json, os, sys, time
os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, sys.argv[1])
import optuna, torch
import optuna_peer as peer
torch.set_num_threads(1)
sweep_path, data, seed, values = sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
args = peer.parse_args([sweep_path, "--data", data])
sweep, base = peer.read_sweep(sweep_path)
memory_format = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format
x_train, y_train, classes = peer.twins.load_split(torch, data, "train", memory_format)
x_test, y_test, _ = peer.twins.load_split(torch, data, "test", memory_format)
objective = peer.objective_factory(args, sweep, base, (x_train, y_train, x_test, y_test, classes), time.time())
print(json.dumps({"accuracy": objective(optuna.trial.FixedTrial(values, number=seed))}))
"""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", help="a phalanx sweep file (configs/sweeps/fmnist_asha.yaml)")
    parser.add_argument("--phalanx", required=True, help="the phalanx program")
    parser.add_argument("--data", required=True, help="the HDF5 dataset both sides read")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--value", action="append", default=[], metavar="KEY=VALUE",
                        help="a value of the sweep's space for the trial (every key of the space)")
    parser.add_argument("--phalanx-set", action="append", default=[], metavar="KEY=VALUE",
                        help="more phalanx overrides, e.g. train.precision=fp32")
    parser.add_argument("--venv-python", default=os.path.join(ROOT, "build", "torch-venv", "bin", "python"),
                        help="a python with torch 2.x and optuna 5.x (bench/cpu_vs_torch.py makes the venv)")
    parser.add_argument("--mpiexec", default="mpirun")
    parser.add_argument("--output", help="also write the JSON result here")
    return parser.parse_args(argv)


def trial_values(sweep, assignments):
    values = {}
    for assignment in assignments:
        key, separator, text = assignment.partition("=")
        if not separator or key not in sweep["space"]:
            raise SystemExit(f"trial_twins: --value {assignment}: not KEY=VALUE of the sweep's space "
                             f"({', '.join(sweep['space'])})")
        values[key] = yaml.safe_load(text)
    missing = [key for key in sweep["space"] if key not in values]
    if missing:
        raise SystemExit(f"trial_twins: give --value for every key of the sweep's space; missing: {', '.join(missing)}")
    return values


def phalanx_accuracy(args, sweep, values, seed, work):
    base = os.path.join(os.path.dirname(os.path.abspath(args.sweep)), sweep["config"])
    run_dir = os.path.join(work, f"phalanx-seed{seed}")
    overrides = [*sweep.get("set", []), f"train.epochs={sweep['budget']['max']}", f"seed={seed}",
                 f"data.path={os.path.abspath(args.data)}",
                 *(f"{key}={value}" for key, value in values.items()), *args.phalanx_set]
    command = [args.mpiexec, "-np", "1", "--bind-to", "none", "-x", "OMP_NUM_THREADS=1", args.phalanx, "train",
               base, "--run-dir", run_dir]
    for override in overrides:
        command += ["--set", override]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"trial_twins: phalanx exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    with open(os.path.join(run_dir, "summary.json")) as stream:
        return json.load(stream)["test_accuracy"]


def torch_accuracy(args, values, seed):
    result = subprocess.run([args.venv_python, "-c", TORCH_TRIAL, os.path.join(ROOT, "bench"), args.sweep, args.data,
                             str(seed), json.dumps(values)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"trial_twins: the PyTorch twin exited {result.returncode}:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])["accuracy"]


def main(argv=None):
    args = parse_args(argv)
    with open(args.sweep) as stream:
        sweep = yaml.safe_load(stream)
    values = trial_values(sweep, args.value)
    runs = {"phalanx": [], "torch": []}
    with tempfile.TemporaryDirectory(prefix="trial-twins-") as work:
        for seed in args.seeds:  # alternating, so that a drift of the machine reaches both alike
            runs["phalanx"].append(phalanx_accuracy(args, sweep, values, seed, work))
            runs["torch"].append(torch_accuracy(args, values, seed))
            print(f"seed {seed}: phalanx {runs['phalanx'][-1]:.4f}, PyTorch {runs['torch'][-1]:.4f}", flush=True)
    report = {"values": values, "phalanx_set": args.phalanx_set, "seeds": args.seeds,
              **{side: {"accuracies": accuracies, "median": statistics.median(accuracies),
                        "mean": statistics.fmean(accuracies)} for side, accuracies in runs.items()}}
    print(json.dumps(report))
    if args.output:
        with open(args.output, "w") as stream:
            json.dump(report, stream, indent=1)


if __name__ == "__main__":
    sys.exit(main())
