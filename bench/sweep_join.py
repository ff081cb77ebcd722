#!/usr/bin/python3
"""A job joining a running sweep half-way (`phalanx sweep SWEEP --join DIR`, docs/SWEEPS.md, "Jobs
that join a running sweep"): the same sweep alone on R ranks, then on R ranks with a second mpirun
of J ranks joining it after half of the alone run's wall time.

    /usr/bin/python3 bench/sweep_join.py --phalanx build/src/phalanx \\
        --sweep configs/sweeps/fmnist_asha.yaml --ranks 1 --join-ranks 1 --work /tmp/sweep-join \\
        [--set trials=9 --set budget.max=3 ...] [--output FILE.json]

Reported per run, from mpirun's clock and sweep.db:
  wall              the sweep's mpirun, start to exit
  busy_seconds      the workers' busy time (the workers table: every job, start to report)
  utilisation       busy_seconds over the rank-seconds the jobs held: R x wall, plus J x the
                    join job's wall (its start-up counts as idle)
  join_to_training  the join job's mpirun start to its first job's start in sweep.db (the goal:
                    training within 10 s)
  best              the best metric at the top rung
"""

import argparse
import datetime
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import train_runs


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phalanx", required=True)
    parser.add_argument("--sweep", required=True)
    parser.add_argument("--ranks", type=int, default=1, help="the sweep's mpirun -np")
    parser.add_argument("--join-ranks", type=int, default=1, help="the joining mpirun's -np")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--work", required=True)
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--output")
    return parser.parse_args(argv)


def command(args, ranks, *words):
    line = [args.mpirun, "--oversubscribe", "--bind-to", "none", "-x", f"OMP_NUM_THREADS={args.threads}",
            "-np", str(ranks), args.phalanx, "sweep", args.sweep, *words]
    for assignment in args.set:
        line += ["--set", assignment]
    return line


def environment(args):
    return dict(os.environ, OMP_NUM_THREADS=str(args.threads), OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def read(directory):
    connection = sqlite3.connect(os.path.join(directory, "sweep.db"))
    try:
        busy = connection.execute("SELECT SUM(busy_seconds) FROM workers").fetchone()[0] or 0.0
        top = connection.execute("SELECT MAX(rung) FROM rung_results").fetchone()[0]
        best = connection.execute("SELECT MAX(metric) FROM rung_results WHERE rung = ?", (top,)).fetchone()[0]
        per_worker = connection.execute("SELECT worker, jobs, busy_seconds FROM workers ORDER BY worker").fetchall()
    finally:
        connection.close()
    return {"busy_seconds": busy, "best": best,
            "workers": [{"worker": w, "jobs": j, "busy_seconds": b} for w, j, b in per_worker]}


def first_job_of(directory, worker_from):
    connection = sqlite3.connect(os.path.join(directory, "sweep.db"), timeout=10)
    try:
        return connection.execute("SELECT MIN(started) FROM jobs WHERE worker >= ?", (worker_from,)).fetchone()[0]
    finally:
        connection.close()


def run(args, join_after):
    directory = os.path.join(args.work, "joined" if join_after is not None else "alone")
    shutil.rmtree(directory, ignore_errors=True)
    sweep_command = command(args, args.ranks, "--sweep-dir", directory)
    start = time.monotonic()
    sweep = subprocess.Popen(sweep_command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=environment(args))
    result = {"command": " ".join(sweep_command)}
    join_wall = 0.0
    if join_after is not None:
        while time.monotonic() - start < join_after and sweep.poll() is None:
            time.sleep(0.2)
        join_command = command(args, args.join_ranks, "--join", directory)
        result["join_command"] = " ".join(join_command)
        result["join_started_after"] = time.monotonic() - start
        join_start_wall = time.time()
        join_start = time.monotonic()
        joined = subprocess.run(join_command, capture_output=True, text=True, env=environment(args))
        join_wall = time.monotonic() - join_start
        result["join_wall"] = join_wall
        result["join_returncode"] = joined.returncode
        if joined.returncode != 0:
            result["join_error"] = train_runs.tail(joined.stdout + joined.stderr)
    output = sweep.communicate()[0]
    wall = time.monotonic() - start
    result.update({"wall": wall, "returncode": sweep.returncode})
    if sweep.returncode != 0:
        result["error"] = train_runs.tail(output)
        return result
    result.update(read(directory))
    held = args.ranks * wall + args.join_ranks * join_wall
    result["utilisation"] = result["busy_seconds"] / held
    if join_after is not None:
        # The joined job's groups are numbered after the sweep's own (as many as its ranks here:
        # one rank per CPU group).
        first = first_job_of(directory, args.ranks)
        result["join_to_training"] = first - join_start_wall if first is not None else None
    return result


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    alone = run(args, None)
    print(f"alone:  wall {alone['wall']:.0f} s, utilisation {alone.get('utilisation', 0):.2f}, "
          f"best {alone.get('best')}", flush=True)
    joined = run(args, alone["wall"] / 2)
    to_training = joined.get("join_to_training")
    print(f"joined: wall {joined['wall']:.0f} s, utilisation {joined.get('utilisation', 0):.2f}, "
          f"best {joined.get('best')}, join job {joined.get('join_wall', 0):.0f} s, training "
          f"{to_training if to_training is None else round(to_training, 1)} s after its start", flush=True)
    if args.output:
        with open(args.output, "w") as stream:
            json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "machine": train_runs.machine_info(args.mpirun), "sweep": args.sweep, "sets": args.set,
                       "ranks": args.ranks, "join_ranks": args.join_ranks, "threads": args.threads,
                       "alone": alone, "joined": joined}, stream, indent=1)
    return 0 if "error" not in alone and "error" not in joined else 1


if __name__ == "__main__":
    sys.exit(main())
