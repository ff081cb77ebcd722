#!/usr/bin/env python3
"""Time to a test accuracy, and the accuracy curve against time, of training configs side by side.

    python3 bench/time_to_accuracy.py --data datasets/fashion-mnist.h5 --repeats 2 \
        configs/fashion_mnist.yaml "old=configs/fashion_mnist.yaml:train.epochs=6,schedule.type=cosine"

Each argument is a config, optionally named (`NAME=`) and with `--set` overrides after a colon
(`KEY=VALUE,KEY=VALUE`). The runs are interleaved (config 1, config 2, ..., then again), each the
README's main command (`mpirun -np RANKS --map-by slot:PE=THREADS`). From every run's summary.json:
the seconds of training (evaluations included, start-up not) to the first evaluation at or above
each threshold, the final test accuracy, images/s and the per-epoch curve (seconds, accuracy). The
table gives medians over the repeats; --output keeps every run. Nothing else may run on the machine
while this measures (docs/BENCHMARKS.md).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import train_runs  # noqa: E402


def parse_config(text):
    """`[NAME=]PATH[:KEY=VALUE,...]` -> (name, path, overrides)."""
    name = None
    if "=" in text.split(":", 1)[0]:
        name, text = text.split("=", 1)
    path, _, sets = text.partition(":")
    overrides = {}
    for item in filter(None, sets.split(",")):
        key, separator, value = item.partition("=")
        if not separator:
            raise SystemExit(f"time_to_accuracy: '{item}' in '{text}' is not KEY=VALUE")
        overrides[key] = value
    return name or os.path.splitext(os.path.basename(path))[0], path, overrides


def seconds_to(history, threshold):
    for entry in history:
        if entry.get("test_accuracy", 0.0) >= threshold:
            return entry["elapsed_seconds"]
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="+", help="[NAME=]CONFIG[:KEY=VALUE,...]")
    parser.add_argument("--data", required=True)
    parser.add_argument("--phalanx", default=os.path.join(ROOT, "build", "src", "phalanx"))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="cores per rank")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--thresholds", default="0.91,0.92,0.93")
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    configs = [parse_config(text) for text in args.configs]
    runs = {name: [] for name, _, _ in configs}
    with tempfile.TemporaryDirectory(prefix="time_to_accuracy.") as scratch:
        for repeat in range(args.repeats):
            for index, (name, path, overrides) in enumerate(configs):
                run_dir = os.path.join(scratch, f"{index}-{repeat}")
                result = train_runs.run_phalanx(args.phalanx, path, {"data.path": args.data, **overrides},
                                                args.ranks, args.threads, run_dir)
                if "error" in result:
                    raise SystemExit(f"{name} failed: {result['command']}\n{result['error']}")
                with open(os.path.join(run_dir, "summary.json")) as f:
                    summary = json.load(f)
                history = summary["history"]
                run = {"command": result["command"], "images_per_sec": summary["images_per_sec"],
                       "test_accuracy": summary["test_accuracy"],
                       "curve": [(h["elapsed_seconds"], h["test_accuracy"]) for h in history],
                       "seconds_to": {str(t): seconds_to(history, t) for t in thresholds}}
                runs[name].append(run)
                curve = "  ".join(f"{s:.1f}s:{a:.4f}" for s, a in run["curve"])
                print(f"repeat {repeat + 1}/{args.repeats}  {name}: {curve}", file=sys.stderr)
    header = f"{'config':24s} {'img/s':>8s} {'final':>7s}" + "".join(f" {'to ' + str(t):>9s}" for t in thresholds)
    print(header)
    for name, _, _ in configs:
        rows = runs[name]
        line = f"{name:24s} {statistics.median(r['images_per_sec'] for r in rows):8.0f}"
        line += f" {statistics.median(r['test_accuracy'] for r in rows):7.4f}"
        for t in thresholds:
            values = [r["seconds_to"][str(t)] for r in rows]
            line += f" {statistics.median(values):8.1f}s" if None not in values else f" {'-':>9s}"
        print(line)
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"machine": train_runs.machine_info(), "ranks": args.ranks, "threads": args.threads,
                       "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
