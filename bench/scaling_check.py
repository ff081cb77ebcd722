#!/usr/bin/python3
"""`phalanx scaling` against measurement on this machine (docs/SCALING.md): for each model and each
placement of the ranks, `phalanx bench calibrate` measures the layers and the all-reduce there,
`phalanx scaling --profile ... --transport ...` predicts the step from that profile, and a real
training run of the same config in the same placement measures it. Compared: the median step time
(the slowest rank's p50, summary.json's step_time_skew) and the exposed all-reduce's share of the
step: what a rank waits after its backward, allreduce_wait + sync_wait over its step_ms, the mean
over the ranks, against the prediction's exposed_share (a typical rank's wait for the all-reduce and
for the slowest rank).

    python3 bench/scaling_check.py build/src/phalanx [--steps 200] [--models fmnist_cnn resnet20]
        [--placements one-rank two-ranks two-hosts two-hosts-10g two-hosts-1g] [--output F.json]
        [--calibrate-iterations 50] [--repeats 1]

Placements: one rank; two ranks on this host (MPI over shared memory; each rank bound to a core);
two hosts, i.e. two network namespaces joined by a veth pair (tests/end_to_end/network_hosts.py:
MPI over TCP), the link unshaped or held to 10 or 1 Gbit/s by a token bucket (tc tbf; needs root and
iproute2). Each rank runs one thread. Nothing else may run on the machine while this measures.
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "end_to_end"))
os.environ.setdefault("PHALANX_E2E_WORK", os.path.join(os.getcwd(), "bench-work"))

PLACEMENTS = {  # name: (ranks, hosts, link Mbit/s or None)
    "one-rank": (1, 1, None),
    "two-ranks": (2, 1, None),
    "two-hosts": (2, 2, None),
    "two-hosts-10g": (2, 2, 10000),
    "two-hosts-1g": (2, 2, 1000),
}
MODELS = {  # preset: (batch per rank, data)
    "fmnist_cnn": (64, "fashion"),
    "resnet20": (32, "synth32"),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phalanx")
    parser.add_argument("--steps", type=int, default=200, help="training steps per measured run")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--placements", nargs="+", default=list(PLACEMENTS), choices=list(PLACEMENTS))
    parser.add_argument("--output", help="JSON file for every row")
    parser.add_argument("--repeats", type=int, default=1,
                        help="calibrate, predict and train this many times per row; the row holds the medians")
    parser.add_argument("--calibrate-iterations", type=int, default=50,
                        help="whole steps, layer passes and all-reduces per size that calibrate times")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.environ["PHALANX_BIN"] = os.path.abspath(args.phalanx)
    import e2e_common as e2e
    from network_hosts import NetworkHosts
    e2e.PHALANX = os.environ["PHALANX_BIN"]

    work = e2e.work_dir("scaling_check")
    makers = {"fashion": lambda: e2e.make_fashion_subset(work, 16384, 1024),
              "synth32": lambda: e2e.make_synth(os.path.join(work, "synth32.h5"), train=8192, test=64, height=32,
                                                width=32, channels=3)}
    data = {MODELS[model][1]: makers[MODELS[model][1]]() for model in args.models}
    hosts = None
    if any(PLACEMENTS[name][1] > 1 for name in args.placements):
        hosts = NetworkHosts("chk", work, subnet="10.231.9").create()
    rows = []
    try:
        for model in args.models:
            batch, dataset = MODELS[model]
            config = e2e.base_config(data[dataset], name=f"check-{model}", preset=model, batch_size=batch,
                                     epochs=100, max_steps=args.steps, log_every_steps=1000)
            config_path = e2e.write_config(os.path.join(work, f"{model}.yaml"), config)
            for placement in args.placements:
                ranks, host_count, rate = PLACEMENTS[placement]

                def launch(*phalanx_args):
                    if host_count == 1:
                        # Each rank on a core of its own, as a job on a node runs: left to float, two
                        # ranks' MPI all-reduce over shared memory ran at 0.85-0.9 GB/s in 3 of 4
                        # calibrations here, against 3.3-4.0 GB/s bound.
                        return e2e.run_command([e2e.MPIEXEC, "--bind-to", "core", "-x", "OMP_NUM_THREADS=1", "-np",
                                                str(ranks), e2e.PHALANX, *map(str, phalanx_args)], timeout=1800)
                    return e2e.run_command(hosts.launch_command(hosts.addresses) + [e2e.PHALANX, *map(str, phalanx_args)],
                                           timeout=1800)

                if hosts is not None:
                    hosts.shape(rate if host_count > 1 else None)
                predictions, measurements = [], []
                for repeat in range(args.repeats):
                    profile = os.path.join(work, f"profile-{model}-{placement}-{repeat}.json")
                    # All-reduces up to 8 MiB: beyond both models' gradients (1.7 MB), and a 64 MiB
                    # one over a 1 Gbit/s link would take a second per iteration.
                    calibrated = launch("bench", "calibrate", config_path, "--iterations", args.calibrate_iterations,
                                        "--max-bytes", 8 << 20, "--output", profile)
                    if calibrated.returncode != 0:
                        raise SystemExit(f"calibrate failed ({model}, {placement}):\n{calibrated.describe()}")
                    transport = [] if ranks == 1 else ["--transport", "network" if host_count > 1 else "shared_memory"]
                    fabric = ["--fabric", "nvlink-h100"] if ranks == 1 else []
                    predicted = e2e.phalanx("scaling", config_path, "--profile", profile, "--gpus-per-node", ranks,
                                            *transport, *fabric, "--json")
                    if predicted.returncode != 0:
                        raise SystemExit(f"scaling failed ({model}, {placement}):\n{predicted.describe()}")
                    predictions.append(json.loads(predicted.stdout)["predictions"][0])
                    run_dir = os.path.join(work, f"run-{model}-{placement}-{repeat}")
                    trained = launch("train", config_path, "--run-dir", run_dir)
                    if trained.returncode != 0:
                        raise SystemExit(f"training failed ({model}, {placement}):\n{trained.describe()}")
                    summary = e2e.read_summary(run_dir)
                    # What a rank waits after its backward, for the all-reduce and for the other ranks
                    # (the stop agreement's sync_wait takes what the all-reduce's wait left), over the ranks.
                    measurements.append({
                        "step": summary["step_time_skew"]["slowest_p50_ms"] / 1e3,
                        "exposed": statistics.mean(
                            (rank["time_breakdown"]["allreduce_wait"]["ms_per_step"] +
                             rank["time_breakdown"]["sync_wait"]["ms_per_step"]) / rank["time_breakdown"]["step_ms"]
                            for rank in summary["ranks"])})
                # Medians over the repeats: a slow spell of the shared machine during one calibration or
                # one run moves one of them.
                predicted_step = statistics.median(p["step_seconds"] for p in predictions)
                predicted_exposed = statistics.median(p["exposed_share"] for p in predictions)
                measured_step = statistics.median(m["step"] for m in measurements)
                measured_exposed = statistics.median(m["exposed"] for m in measurements)
                row = {"model": model, "placement": placement, "ranks": ranks, "hosts": host_count,
                       "link_mbit": rate, "batch": batch, "steps": args.steps, "repeats": args.repeats,
                       "predicted_step_ms": 1e3 * predicted_step,
                       "measured_step_ms": 1e3 * measured_step,
                       "step_error": predicted_step / measured_step - 1,
                       "predicted_exposed_share": predicted_exposed,
                       "measured_exposed_share": measured_exposed,
                       "exposed_points": 100 * (predicted_exposed - measured_exposed),
                       "each": [{"predicted_step_ms": 1e3 * p["step_seconds"], "measured_step_ms": 1e3 * m["step"],
                                 "predicted_exposed_share": p["exposed_share"], "measured_exposed_share": m["exposed"]}
                                for p, m in zip(predictions, measurements)]}
                rows.append(row)
                print(f"{model:<11} {placement:<14} step predicted {row['predicted_step_ms']:8.2f} ms, measured "
                      f"{row['measured_step_ms']:8.2f} ms ({100 * row['step_error']:+6.1f}%); exposed all-reduce "
                      f"{100 * row['predicted_exposed_share']:5.1f}% vs {100 * measured_exposed:5.1f}% "
                      f"({row['exposed_points']:+5.1f} points)", flush=True)
    finally:
        if hosts is not None:
            hosts.delete()
    within = sum(abs(row["step_error"]) <= 0.15 and abs(row["exposed_points"]) <= 5 for row in rows)
    print(f"{within} of {len(rows)} within 15% (step) and 5 points (exposed share); median |step error| "
          f"{100 * statistics.median(abs(row['step_error']) for row in rows):.1f}%")
    if args.output:
        with open(args.output, "w") as stream:
            json.dump(rows, stream, indent=1)
    return rows


if __name__ == "__main__":
    main()
