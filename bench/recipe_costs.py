#!/usr/bin/env python3
"""What each training-recipe feature costs per step: images/s of the same job with and without it.

    python3 bench/recipe_costs.py --data datasets/fashion-mnist.h5 --ranks 2 --steps 300 --repeats 3

Every variant is the base config (configs/fashion_mnist.yaml unless --config) with a few
`--set` overrides; the baseline has none. The runs are interleaved (baseline, feature 1, feature 2,
..., then again) so that a machine that slows down or speeds up during the measurement shifts every
variant alike, and each variant's median over its repeats is compared with the baseline's median
as a ratio. Each run trains `--steps` updates (train.max_steps; the schedule still spans the config's
epochs) without checkpoints; images/s is summary.json's (the steps after the first). On CPU ranks
the augmentations run in each rank's loader thread, which shares the rank's cores with training, so
their cost shows up in the step time here.

A variant whose keys this build does not know (phalanx exits 2 naming the key) is reported as
refused and left out of the table. Nothing else may run on the machine while this measures
(docs/BENCHMARKS.md).
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

# (name, overrides): one feature at a time, at the settings the reference recipes use.
VARIANTS = [
    ("baseline", {}),
    ("random crop, padding 2", {"data.augment.random_crop_padding": 2}),
    ("horizontal flip", {"data.augment.horizontal_flip": "true"}),
    ("cutout 8", {"data.augment.cutout": 8}),
    ("random erasing p=0.25", {"data.augment.random_erasing.probability": 0.25}),
    ("TrivialAugment", {"data.augment.trivial_augment": "true"}),
    ("RandAugment 2 ops, magnitude 9", {"data.augment.rand_augment.num_ops": 2,
                                        "data.augment.rand_augment.magnitude": 9}),
    ("mixup alpha 0.2", {"train.mixup.mixup_alpha": 0.2}),
    ("cutmix alpha 1.0", {"train.mixup.cutmix_alpha": 1.0}),
    ("label smoothing 0.1", {"train.label_smoothing": 0.1}),
    ("clip_grad_norm 1.0", {"train.clip_grad_norm": 1.0}),
    ("EMA every step", {"train.ema.decay": 0.999}),
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="the HDF5 dataset to train on")
    parser.add_argument("--config", default=os.path.join(ROOT, "configs", "fashion_mnist.yaml"))
    parser.add_argument("--phalanx", default=os.path.join(ROOT, "build", "src", "phalanx"))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="cores per rank")
    parser.add_argument("--steps", type=int, default=300, help="updates per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated variant names (the baseline always runs)")
    parser.add_argument("--output", default=None, help="write the result as JSON here too")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    variants = VARIANTS
    if args.only:
        wanted = {name.strip() for name in args.only.split(",")}
        variants = [v for v in VARIANTS if v[0] == "baseline" or v[0] in wanted]
    common = {"data.path": args.data, "train.max_steps": args.steps, "checkpoint.every_steps": 0,
              "train.log_every_steps": 100000}
    measured = {name: [] for name, _ in variants}
    refused = {}
    with tempfile.TemporaryDirectory(prefix="recipe_costs.") as scratch:
        for repeat in range(args.repeats):
            for index, (name, overrides) in enumerate(variants):
                if name in refused:
                    continue
                run_dir = os.path.join(scratch, f"{index}-{repeat}")
                result = train_runs.run_phalanx(args.phalanx, args.config, {**common, **overrides}, args.ranks,
                                                args.threads, run_dir)
                if "refused" in result:
                    refused[name] = result["refused"]
                    print(f"{name}: refused: {result['refused']}", file=sys.stderr)
                    continue
                if "error" in result:
                    raise SystemExit(f"{name} failed: {result['command']}\n{result['error']}")
                measured[name].append(result["images_per_sec"])
                print(f"repeat {repeat + 1}/{args.repeats}  {name:34s} {result['images_per_sec']:9.1f} img/s",
                      file=sys.stderr)
    baseline = statistics.median(measured["baseline"])
    rows = []
    for name, overrides in variants:
        if name in refused or not measured[name]:
            continue
        median = statistics.median(measured[name])
        rows.append({"variant": name, "overrides": overrides, "images_per_sec": measured[name],
                     "median": median, "ratio_to_baseline": median / baseline})
    print(f"{'variant':34s} {'img/s (median)':>15s} {'vs baseline':>12s}")
    for row in rows:
        print(f"{row['variant']:34s} {row['median']:15.1f} {row['ratio_to_baseline']:11.3f}x")
    for name, message in refused.items():
        print(f"{name}: not in this build ({message})")
    result = {"machine": train_runs.machine_info(), "ranks": args.ranks, "threads": args.threads,
              "steps": args.steps, "repeats": args.repeats, "config": os.path.relpath(args.config, ROOT),
              "rows": rows, "refused": refused}
    if args.output:
        with open(args.output, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
