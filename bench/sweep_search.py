#!/usr/bin/python3
"""Search strategies of `phalanx sweep` on one sweep file's budget: random+ASHA against TPE+ASHA
(docs/SWEEPS.md, "TPE search") and PBT (--searches ... pbt: the PBT sweep file beside it), each
over several sweep seeds, on the same ranks.

    /usr/bin/python3 bench/sweep_search.py --phalanx build/src/phalanx \
        --sweep configs/sweeps/fmnist_asha.yaml --ranks 2 --seeds 1 2 3 --work /tmp/sweep-search \
        --output /tmp/sweep_search.json [--set KEY=VALUE ...] [--tpe-set tpe.startup_trials=N ...]

Every seed runs each search once, back to back, the order alternating between seeds so that a
drifting machine hits both alike. A run is `mpirun -np RANKS phalanx sweep SWEEP --set seed=S
--set search=X`; everything else comes from the sweep file (and --set, e.g. trials=6 for a smoke
run). From each run's sweep.db:
  best          the best metric of a trial that reached the top rung (what Optuna's best_value
                is: a finished trial's), and its time after the sweep's first job started
  best_any      the best metric at any rung
  wall          mpirun's wall time; sweep_seconds: first job start to last job end in sweep.db
  curve         (seconds, best so far at the top rung) at each top-rung result
and per seed, each search's best at the moment random search's sweep ended. The table quotes
medians over the seeds. The Optuna side of the comparison (its TPE sampler and
SuccessiveHalvingPruner over PyTorch, on the same sweep file) is bench/optuna_peer.py.
"""

import argparse
import datetime
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

import train_runs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phalanx", required=True, help="the phalanx binary")
    parser.add_argument("--sweep", required=True, help="the sweep file (its budget, space and metric)")
    parser.add_argument("--ranks", type=int, default=2, help="mpirun -np (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS per rank (default 1)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--searches", nargs="+", default=["random", "tpe"], choices=["random", "grid", "tpe", "pbt"],
                        help="pbt runs --pbt-sweep (its population on the same budget) with random draws")
    parser.add_argument("--pbt-sweep", default=None,
                        help="the sweep file for `pbt` (default: fmnist_pbt.yaml beside --sweep)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a sweep-file override for every run (repeatable)")
    parser.add_argument("--tpe-set", action="append", default=[], metavar="KEY=VALUE",
                        help="an override for the TPE runs only, e.g. tpe.startup_trials=5 (a sweep whose "
                             "search is not tpe refuses tpe.* keys)")
    parser.add_argument("--work", required=True, help="folder for the sweep directories (emptied per run)")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--timeout", type=int, default=7200, help="seconds per sweep")
    parser.add_argument("--output", help="JSON file for every run and the summary")
    return parser.parse_args(argv)


def rows(database, sql):
    connection = sqlite3.connect(database)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in connection.execute(sql)]
    finally:
        connection.close()


def read_sweep(directory, maximize):
    """What a finished sweep's database says: best results, their times, the curve."""
    database = os.path.join(directory, "sweep.db")
    span = rows(database, "SELECT MIN(started) AS first, MAX(finished) AS last FROM jobs")[0]
    top = rows(database, "SELECT MAX(rung) AS rung FROM rung_results")[0]["rung"]
    results = rows(database, "SELECT trial_id, rung, metric, finished FROM rung_results ORDER BY finished")
    better = (lambda a, b: a > b) if maximize else (lambda a, b: a < b)
    curve, best, best_any = [], None, None
    for result in results:
        if best_any is None or better(result["metric"], best_any):
            best_any = result["metric"]
        if result["rung"] == top and (best is None or better(result["metric"], best)):
            best = result["metric"]
            curve.append((result["finished"] - span["first"], best))
    methods = rows(database, "SELECT method, COUNT(*) AS trials FROM proposals GROUP BY method")
    return {"best": best, "best_seconds": curve[-1][0] if curve else None, "best_any": best_any,
            "top_rung": top, "sweep_seconds": span["last"] - span["first"], "curve": curve,
            "trials": rows(database, "SELECT COUNT(*) AS n FROM trials")[0]["n"],
            "proposals": {row["method"]: row["trials"] for row in methods}}


def best_by(curve, seconds):
    """The best top-rung metric reached within `seconds` of the sweep's start (None: none yet)."""
    reached = [value for at, value in curve if at <= seconds]
    return reached[-1] if reached else None


def run_sweep(args, search, seed):
    directory = os.path.join(args.work, f"{search}-seed{seed}")
    shutil.rmtree(directory, ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    sweep_file, draws = args.sweep, search
    if search == "pbt":
        # PBT is a scheduler, not a search: its own sweep file (population and intervals on the
        # same epoch budget) with random initial draws.
        sweep_file = args.pbt_sweep or os.path.join(os.path.dirname(args.sweep), "fmnist_pbt.yaml")
        draws = "random"
    command = [args.mpirun, "--oversubscribe", "--bind-to", "none", "-x", f"OMP_NUM_THREADS={args.threads}",
               "-np", str(args.ranks), args.phalanx, "sweep", sweep_file, "--sweep-dir", directory,
               "--set", f"seed={seed}", "--set", f"search={draws}"]
    for assignment in args.set + (args.tpe_set if search == "tpe" else []):
        command += ["--set", assignment]
    start = time.monotonic()
    try:
        process = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"search": search, "seed": seed, "command": " ".join(command),
                "error": f"timed out after {args.timeout} s"}
    wall = time.monotonic() - start
    run = {"search": search, "seed": seed, "command": " ".join(command), "wall": wall,
           "returncode": process.returncode}
    if process.returncode != 0:
        run["error"] = train_runs.tail(process.stdout + "\n" + process.stderr)
        return run
    run.update(read_sweep(directory, maximize=sweep_maximizes(process.stdout)))
    return run


def sweep_maximizes(output):
    """The sweep's goal from its header line (`metric test_accuracy (maximize)`)."""
    for line in output.splitlines():
        if line.startswith("sweep ") and "metric" in line:
            return "(minimize)" not in line
    return True


def summarise(runs, searches, seeds):
    summary = {}
    for search in searches:
        done = [run for run in runs if run["search"] == search and "error" not in run]
        summary[search] = {
            "runs": len(done),
            "best": train_runs.median_or_none([run["best"] for run in done if run["best"] is not None]),
            "wall": train_runs.median_or_none([run["wall"] for run in done]),
            "best_seconds": train_runs.median_or_none([run["best_seconds"] for run in done
                                                      if run["best_seconds"] is not None]),
        }
    # Each search's best when random search's sweep of the same seed had ended.
    if "random" in searches:
        for search in searches:
            reached = []
            for seed in seeds:
                mine = [run for run in runs if run["search"] == search and run["seed"] == seed and "error" not in run]
                baseline = [run for run in runs if run["search"] == "random" and run["seed"] == seed
                            and "error" not in run]
                if mine and baseline:
                    value = best_by(mine[0]["curve"], baseline[0]["sweep_seconds"])
                    if value is not None:
                        reached.append(value)
            summary[search]["best_when_random_ended"] = train_runs.median_or_none(reached)
    return summary


def fmt(value, spec):
    return "-" if value is None else spec.format(value)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    runs = []
    for index, seed in enumerate(args.seeds):
        order = args.searches if index % 2 == 0 else list(reversed(args.searches))
        for search in order:
            run = run_sweep(args, search, seed)
            runs.append(run)
            if "error" in run:
                print(f"{search} seed {seed}: failed\n{run['error']}", file=sys.stderr)
            else:
                print(f"{search:6s} seed {seed}: best {fmt(run['best'], '{:.4f}')} at "
                      f"{fmt(run['best_seconds'], '{:.0f}')} s, wall {run['wall']:.0f} s, "
                      f"proposals {run['proposals']}", flush=True)
    summary = summarise(runs, args.searches, args.seeds)
    print(f"\nmedians over seeds {args.seeds} ({args.ranks} ranks x {args.threads} threads):")
    print(f"{'search':8s} {'best':>8s} {'at s':>8s} {'wall s':>8s} {'best when random ended':>24s}")
    for search, numbers in summary.items():
        print(f"{search:8s} {fmt(numbers['best'], '{:.4f}'):>8s} {fmt(numbers['best_seconds'], '{:.0f}'):>8s} "
              f"{fmt(numbers['wall'], '{:.0f}'):>8s} {fmt(numbers.get('best_when_random_ended'), '{:.4f}'):>24s}")
    if args.output:
        with open(args.output, "w") as stream:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "machine": train_runs.machine_info(args.mpirun), "sweep": args.sweep, "sets": args.set,
                       "tpe_sets": args.tpe_set, "ranks": args.ranks, "threads": args.threads, "runs": runs, "summary": summary},
                      stream, indent=1)
    return 0 if all("error" not in run for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
