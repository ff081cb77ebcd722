#!/usr/bin/python3
"""Side-by-side training throughput of phalanx and PyTorch on the fmnist_cnn network (CPU).

Run with Debian's python3 (it has python3-torch, h5py and numpy):

    /usr/bin/python3 bench/fmnist_vs_torch.py --phalanx build-bench/src/phalanx \
        --data /tmp/bench-fmnist.h5 --steps 300 --repeats 3 --output /tmp/fmnist_vs_torch.json

Pairings (equal ranks, threads per rank, batch per rank, optimizer, learning rate, steps, data):
  1x2  phalanx 1 rank x 2 threads, batch 128          vs PyTorch 1 process x 2 threads, batch 128
  2x1  mpirun -np 2 --map-by slot:PE=1 phalanx,
       1 thread per rank, batch 64 per rank            vs PyTorch DDP (gloo, 127.0.0.1) 2 ranks x 1
                                                          thread, batch 64 per rank
  1x1  phalanx 1 rank x 1 thread, batch 128           vs PyTorch 1 process x 1 thread, batch 128

Every repeat runs every pairing, phalanx and PyTorch back to back (the order alternates between
repeats), so drift of a noisy machine hits both sides alike; the table quotes medians over the
repeats and the ratio phalanx/PyTorch of the medians (and the median of the per-repeat ratios).
phalanx's images/s and time breakdown come from its summary.json (warm-up steps and evaluation
excluded); PyTorch's from bench/torch_cpu_train.py (same definition).
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile

import train_runs
from train_runs import ROOT, STAGES, median_or_none

# name -> (ranks, threads per rank, batch per rank)
PAIRINGS = {
    "1x2": (1, 2, 128),
    "2x1": (2, 1, 64),
    "1x1": (1, 1, 128),
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phalanx", default=os.path.join(ROOT, "build-bench", "src", "phalanx"))
    p.add_argument("--data", default="/tmp/bench-fmnist.h5", help="phalanx HDF5 dataset")
    p.add_argument("--config", default=os.path.join(ROOT, "configs", "fashion_mnist.yaml"),
                   help="phalanx config the runs start from (overridden with --set)")
    p.add_argument("--steps", type=int, default=300, help="training steps per run (train.max_steps)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--pairings", default="1x2,2x1,1x1", help="comma list of " + ",".join(PAIRINGS))
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="adamw")
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--torch-python", default="/usr/bin/python3", help="python with torch, h5py, numpy")
    p.add_argument("--torch-warmup", type=int, default=5, help="steps PyTorch leaves out of its timing")
    p.add_argument("--no-bind-ddp", action="store_true",
                   help="do not pin PyTorch DDP ranks to one core each (phalanx's mpirun pins)")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--work-dir", default=None, help="where run directories go (default: a temp dir)")
    p.add_argument("--keep-runs", action="store_true", help="keep phalanx run directories")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    p.add_argument("--output", default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    args.pairings = [x.strip() for x in args.pairings.split(",") if x.strip()]
    for name in args.pairings:
        if name not in PAIRINGS:
            p.error(f"unknown pairing {name!r} (known: {', '.join(PAIRINGS)})")
    return args


def run_phalanx(args, pairing, run_dir):
    ranks, threads, batch = PAIRINGS[pairing]
    # steps per epoch = 60000 // 128 = 468 > 300, so a 300-step run is one partial epoch: the
    # evaluation happens once, at the end, outside the timing.
    sets = {
        "device": "cpu",
        "threads": threads,
        "data.path": args.data,
        "train.batch_size": batch,
        "train.max_steps": args.steps,
        "train.epochs": 1000,
        "train.log_every_steps": 100,
        "optimizer.type": args.optimizer,
        "optimizer.learning_rate": args.lr,
        "schedule.type": "constant",
        "schedule.warmup_epochs": 0,
        "checkpoint.every_steps": 0,
        # PyTorch runs fp32 here: so does phalanx, whatever the config says (auto is bf16 on CPUs
        # with bf16 instructions).
        "train.precision": "fp32",
        "train.activation_dtype": "fp32",
    }
    return train_runs.run_phalanx(args.phalanx, args.config, sets, ranks, threads, run_dir, args.mpirun,
                                  args.timeout)


def run_torch(args, pairing):
    ranks, threads, batch = PAIRINGS[pairing]
    options = ["--model", "fmnist_cnn", "--data", args.data, "--steps", args.steps, "--warmup", args.torch_warmup,
               "--batch-size", batch, "--optimizer", args.optimizer, "--lr", args.lr, "--eval"]
    return train_runs.run_torch(args.torch_python, options, ranks, threads, not args.no_bind_ddp, args.timeout)


def summarise(pairing, runs):
    ph = [r["phalanx"] for r in runs]
    th = [r["torch"] for r in runs]
    ph_rates = [r.get("images_per_sec") for r in ph if "error" not in r]
    th_rates = [r.get("images_per_sec") for r in th if "error" not in r]
    out = {
        "pairing": pairing,
        "ranks": PAIRINGS[pairing][0],
        "threads_per_rank": PAIRINGS[pairing][1],
        "batch_per_rank": PAIRINGS[pairing][2],
        "phalanx_images_per_sec": ph_rates,
        "torch_images_per_sec": th_rates,
        "phalanx_median": median_or_none(ph_rates),
        "torch_median": median_or_none(th_rates),
        "phalanx_failures": sum(1 for r in ph if "error" in r),
        "torch_failures": sum(1 for r in th if "error" in r),
    }
    if out["phalanx_median"] and out["torch_median"]:
        out["ratio"] = out["phalanx_median"] / out["torch_median"]
    per_repeat = [r["phalanx"]["images_per_sec"] / r["torch"]["images_per_sec"] for r in runs
                  if "error" not in r["phalanx"] and "error" not in r["torch"]]
    out["ratio_per_repeat"] = per_repeat
    out["ratio_median_of_repeats"] = median_or_none(per_repeat)
    # phalanx's stage breakdown: median over repeats of rank 0's ms/step and share per stage, and
    # for multi-rank runs the largest exposed all-reduce share over ranks.
    ok = [r for r in ph if "error" not in r]
    if ok:
        breakdown = {}
        for stage in STAGES:
            breakdown[stage] = {
                "ms_per_step": median_or_none([r["time_breakdown"].get(stage, {}).get("ms_per_step") for r in ok]),
                "share": median_or_none([r["time_breakdown"].get(stage, {}).get("share") for r in ok]),
            }
        out["phalanx_breakdown"] = breakdown
        if PAIRINGS[pairing][0] > 1:
            out["phalanx_allreduce_share_max_rank"] = median_or_none(
                [max((b.get("allreduce_wait", {}).get("share", 0.0) for b in r["rank_breakdowns"]), default=None)
                 for r in ok])
        out["phalanx_test_accuracy"] = median_or_none([r.get("test_accuracy") for r in ok])
    tok = [r for r in th if "error" not in r]
    if tok:
        out["torch_step_ms_median"] = median_or_none([r.get("step_ms_median") for r in tok])
        out["torch_test_accuracy"] = median_or_none([r.get("test_accuracy") for r in tok])
    errors = [r["error"] for r in ph + th if "error" in r]
    if errors:
        out["first_error"] = errors[0]
    return out


def machine_info(args):
    info = train_runs.machine_info(args.mpirun)
    info["torch_version"] = train_runs.torch_version(args.torch_python)
    return info


def fmt(value, spec="{:.0f}"):
    return "—" if value is None else spec.format(value)


def print_table(results):
    print()
    print(f"{'pairing':<26}{'phalanx img/s':>14}{'torch img/s':>13}{'ratio':>8}  "
          f"{'phalanx breakdown (share of a step)'}")
    for s in results["pairings"]:
        ranks, threads, batch = s["ranks"], s["threads_per_rank"], s["batch_per_rank"]
        peer = "DDP" if ranks > 1 else "1 proc"
        label = f"{s['pairing']} (B={batch}/rank, {peer})"
        b = s.get("phalanx_breakdown")
        shares = "  ".join(f"{k}={100 * v['share']:.1f}%" for k, v in b.items() if v["share"] is not None) if b else ""
        print(f"{label:<26}{fmt(s['phalanx_median']):>14}{fmt(s['torch_median']):>13}"
              f"{fmt(s.get('ratio'), '{:.2f}x'):>8}  {shares}")
        if s.get("phalanx_allreduce_share_max_rank") is not None:
            print(f"{'':<26}exposed all-reduce share of a step: rank 0 "
                  f"{100 * b['allreduce_wait']['share']:.1f}%, worst rank "
                  f"{100 * s['phalanx_allreduce_share_max_rank']:.1f}%")
        if s["phalanx_failures"] or s["torch_failures"]:
            print(f"{'':<26}failures: phalanx {s['phalanx_failures']}, torch {s['torch_failures']}")
            if s.get("first_error"):
                print("    " + s["first_error"].replace("\n", "\n    "))
    print(f"load average (1, 5, 15 min) at start {', '.join(f'{x:.2f}' for x in results['load_average_start'])}, "
          f"at end {', '.join(f'{x:.2f}' for x in results['load_average_end'])}")
    c = results.get("one_by_two_vs_two_by_one")
    if c:
        print()
        print(f"2 ranks x 1 thread vs 1 rank x 2 threads: phalanx {fmt(c.get('phalanx_2x1'))} vs "
              f"{fmt(c.get('phalanx_1x2'))} img/s ({fmt(c.get('phalanx_ratio'), '{:.2f}x')}); "
              f"PyTorch DDP {fmt(c.get('torch_2x1'))} vs 1 proc {fmt(c.get('torch_1x2'))} img/s "
              f"({fmt(c.get('torch_ratio'), '{:.2f}x')})")


def main(argv=None):
    args = parse_args(argv)
    args.phalanx = os.path.abspath(args.phalanx)
    args.data = os.path.abspath(args.data)
    for path, what in ((args.phalanx, "phalanx binary"), (args.data, "dataset"), (args.config, "config")):
        if not os.path.exists(path):
            print(f"fmnist_vs_torch: {what} not found: {path}", file=sys.stderr)
            return 2
    work = args.work_dir or tempfile.mkdtemp(prefix="fmnist-vs-torch-")
    os.makedirs(work, exist_ok=True)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    load_start = os.getloadavg()  # other work on the machine skews everything: record it

    runs = {name: [] for name in args.pairings}
    for repeat in range(args.repeats):
        for name in args.pairings:
            run_dir = os.path.join(work, f"phalanx-{name}-r{repeat}")
            shutil.rmtree(run_dir, ignore_errors=True)
            order = ["phalanx", "torch"] if repeat % 2 == 0 else ["torch", "phalanx"]
            entry = {"repeat": repeat}
            for side in order:
                entry[side] = run_phalanx(args, name, run_dir) if side == "phalanx" else run_torch(args, name)
                r = entry[side]
                status = f"{r['images_per_sec']:.0f} img/s" if "error" not in r else "FAILED"
                print(f"[repeat {repeat + 1}/{args.repeats}] {name:>4} {side:<8} {status}", file=sys.stderr,
                      flush=True)
            if not args.keep_runs:
                shutil.rmtree(run_dir, ignore_errors=True)
            runs[name].append(entry)

    results = {
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "benchmark": "fmnist_cnn training throughput, phalanx vs PyTorch (CPU)",
        "started": started,
        "command": " ".join([sys.executable] + sys.argv),
        "machine": machine_info(args),
        "steps": args.steps,
        "repeats": args.repeats,
        "optimizer": args.optimizer,
        "learning_rate": args.lr,
        "dataset": args.data,
        "pairings": [summarise(name, runs[name]) for name in args.pairings],
        "runs": runs,
    }
    by = {s["pairing"]: s for s in results["pairings"]}
    if "1x2" in by and "2x1" in by:
        c = {"phalanx_1x2": by["1x2"]["phalanx_median"], "phalanx_2x1": by["2x1"]["phalanx_median"],
             "torch_1x2": by["1x2"]["torch_median"], "torch_2x1": by["2x1"]["torch_median"]}
        if c["phalanx_1x2"] and c["phalanx_2x1"]:
            c["phalanx_ratio"] = c["phalanx_2x1"] / c["phalanx_1x2"]
        if c["torch_1x2"] and c["torch_2x1"]:
            c["torch_ratio"] = c["torch_2x1"] / c["torch_1x2"]
        results["one_by_two_vs_two_by_one"] = c
    print_table(results)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=2)
        print(f"\nwrote {args.output}")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    failed = any(s["phalanx_failures"] or s["torch_failures"] for s in results["pairings"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
