#!/usr/bin/env python3
"""Where a training step's time goes, per kind of op, in phalanx and in PyTorch side by side.

    /usr/bin/python3 bench/op_profile.py --data synth32.h5 --model mobilenet_v2 \
        --torch-python VENV/bin/python --steps 12 --threads 2 --batch 64

phalanx: one run times the steps (summary.json's median step, no profiling on), a second run
with ONEDNN_VERBOSE=profile_exec gives every oneDNN primitive's execution time. Its lines are
cut into steps at each execution of the model's first convolution (forward_training); a step's
primitives are classed by kind and shape (depthwise, 1x1 and other convolutions; eltwise,
reorder, pooling, inner product), and what the timed step has beyond oneDNN's sum is phalanx's
own code: batch norm, the element-wise activations and sums that are not oneDNN eltwise, the
loss and the optimizer (the stage breakdown gives the optimizer's share on its own).

PyTorch: torchvision's model of the same name in channels_last (its fastest fp32 layout on
CPU), the same batch, SGD with momentum and label smoothing; a timed loop, then
torch.profiler over the same number of steps, every aten op's self time classed the same way
(a convolution by its weight's shape).

Both sides run at fp32 unless --precision bf16 (phalanx train.precision=bf16 with bf16
activations; PyTorch bf16 autocast). Medians over the steps, ms per step. Nothing else may run
on the machine while this measures (docs/BENCHMARKS.md).
"""

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import train_runs  # noqa: E402

WARMUP = 3
CATEGORIES = ["conv depthwise", "conv 1x1", "conv other", "batch norm", "activation", "add / scale",
              "pooling", "linear", "reorder / copy", "loss", "optimizer", "phalanx own code", "other"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="phalanx HDF5 dataset (bench/cpu_vs_torch.py's synth files)")
    parser.add_argument("--model", default="mobilenet_v2", help="a preset with a torchvision twin")
    parser.add_argument("--phalanx", default=os.path.join(ROOT, "build", "src", "phalanx"))
    parser.add_argument("--torch-python", default=None, help="python of a venv with torch and torchvision")
    parser.add_argument("--steps", type=int, default=12, help="measured steps per run (after 3 warm-up steps)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--output", default=None, help="write the result as JSON here too")
    parser.add_argument("--torch-side", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# ---- phalanx ----------------------------------------------------------------------------------

def phalanx_command(args, run_dir):
    sets = {"device": "cpu", "threads": args.threads, "data.path": args.data, "model.preset": args.model,
            "train.batch_size": args.batch, "train.max_steps": WARMUP + args.steps, "train.epochs": 1000,
            "train.precision": args.precision, "train.activation_dtype": args.precision,
            "train.label_smoothing": 0.1, "optimizer.type": "sgd", "optimizer.learning_rate": 0.05,
            "optimizer.momentum": 0.9, "optimizer.weight_decay": 4e-5, "schedule.type": "constant",
            "schedule.warmup_epochs": 0, "checkpoint.every_steps": 0, "train.log_every_steps": 1000}
    command = [args.phalanx, "train", os.path.join(ROOT, "configs", "resnet20_synth.yaml")]
    for key, value in sets.items():
        command += ["--set", f"{key}={value}"]
    return command + ["--run-dir", run_dir]


def convolution_class(problem):
    """'conv depthwise' / 'conv 1x1' / 'conv other' from oneDNN's problem descriptor
    (e.g. g32mb64_ic32oc32_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1)."""
    groups = re.match(r"g(\d+)", problem)
    input_channels = re.search(r"ic(\d+)", problem)
    if groups and input_channels and groups.group(1) == input_channels.group(1):
        return "conv depthwise"
    if "kh1" in problem and "kw1" in problem:
        return "conv 1x1"
    return "conv other"


DNNL_CLASSES = {"eltwise": "activation", "reorder": "reorder / copy", "pooling": "pooling",
                "inner_product": "linear", "batch_normalization": "batch norm", "binary": "add / scale",
                "sum": "add / scale", "softmax": "loss", "matmul": "linear"}


def dnnl_steps(output):
    """Per training step, {category: ms} from ONEDNN_VERBOSE=profile_exec lines."""
    steps, current, first_problem = [], None, None
    for line in output.splitlines():
        if not line.startswith("onednn_verbose") or ",exec," not in line:
            continue
        fields = line.split(",")
        try:
            at = fields.index("cpu")
            kind, propagation = fields[at + 1], fields[at + 3]
            milliseconds, problem = float(fields[-1]), fields[-2]
        except (ValueError, IndexError):
            continue
        if propagation == "forward_inference":
            current = None  # evaluation: not a training step
            continue
        if kind == "convolution" and propagation == "forward_training":
            if first_problem is None:
                first_problem = problem
            if problem == first_problem:
                current = collections.Counter()
                steps.append(current)
        if current is None:
            continue
        category = convolution_class(problem) if kind == "convolution" else DNNL_CLASSES.get(kind, "other")
        current[category] += milliseconds
        detail = category if kind == "convolution" else kind
        current[f"  {detail} {propagation}"] += milliseconds  # the detail lines
    return steps


def profile_phalanx(args, workdir):
    timed_dir = os.path.join(workdir, "phalanx-timed")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    timed = subprocess.run(phalanx_command(args, timed_dir), env=env, capture_output=True, text=True)
    if timed.returncode != 0:
        raise SystemExit("phalanx run failed:\n" + train_runs.tail(timed.stdout + timed.stderr))
    with open(os.path.join(timed_dir, "summary.json")) as file:
        summary = json.load(file)
    breakdown = summary["time_breakdown"]
    step_ms = summary["ranks"][0]["step_time_ms"]["p50_ms"] if summary.get("ranks") else breakdown["step_ms"]
    verbose = subprocess.run(phalanx_command(args, os.path.join(workdir, "phalanx-verbose")),
                             env=dict(env, ONEDNN_VERBOSE="profile_exec"), capture_output=True, text=True)
    if verbose.returncode != 0:
        raise SystemExit("phalanx verbose run failed:\n" + train_runs.tail(verbose.stdout + verbose.stderr))
    steps = dnnl_steps(verbose.stdout)[WARMUP:WARMUP + args.steps]
    if not steps:
        raise SystemExit("no oneDNN executions in the verbose run (is this build's oneDNN verbose-enabled?)")
    keys = sorted({key for step in steps for key in step})
    split = {key: statistics.median(step.get(key, 0.0) for step in steps) for key in keys}
    onednn = sum(value for key, value in split.items() if not key.startswith(" "))
    optimizer = breakdown["optimizer"]["ms_per_step"]
    split["optimizer"] = optimizer
    split["phalanx own code"] = max(0.0, step_ms - onednn - optimizer)
    return {"step_ms": step_ms, "images_per_sec": summary["images_per_sec"], "split": split,
            "onednn_ms": onednn, "command": " ".join(phalanx_command(args, timed_dir))}


# ---- PyTorch (runs under --torch-python with --torch-side) --------------------------------------

def torch_class(name, shapes):
    lowered = name.lower()
    if "conv" in lowered:
        weights = [shape for shape in shapes if isinstance(shape, list) and len(shape) == 4]
        weight = weights[1] if len(weights) > 1 else (weights[0] if weights else None)
        if "backward" in lowered and len(weights) >= 3:
            weight = weights[2]  # convolution_backward(grad_output, input, weight, ...)
        if weight and weight[1] == 1 and weight[2] > 1:
            return "conv depthwise"
        if weight and weight[2] == 1 and weight[3] == 1:
            return "conv 1x1"
        return "conv other"
    if "batch_norm" in lowered:
        return "batch norm"
    if any(word in lowered for word in ("hardtanh", "relu", "silu", "sigmoid", "hardswish", "gelu", "threshold")):
        return "activation"
    if "_foreach" in lowered or "sgd" in lowered:
        return "optimizer"
    if any(word in lowered for word in ("cross_entropy", "log_softmax", "nll_loss")):
        return "loss"
    if any(word in lowered for word in ("pool", "mean")):
        return "pooling"
    if any(word in lowered for word in ("addmm", "linear", "::mm", "matmul")):
        return "linear"
    if lowered in ("aten::add", "aten::add_", "aten::mul", "aten::mul_"):
        return "add / scale"
    if any(word in lowered for word in ("copy", "to_dense", "reorder", "contiguous", "clone")):
        return "reorder / copy"
    return "other"


def torch_side(args):
    import h5py
    import numpy as np
    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    with h5py.File(args.data, "r") as file:
        images = file["/train/images"][: args.batch * 4]
        labels = file["/train/labels"][: args.batch * 4].astype(np.int64)
        classes = len(file["/"].attrs["classes"])
    inputs = torch.from_numpy(images.astype(np.float32) / 255.0).permute(0, 3, 1, 2)
    inputs = inputs.contiguous(memory_format=torch.channels_last)
    targets = torch.from_numpy(labels)
    model = getattr(torchvision.models, args.model)(num_classes=classes).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=4e-5)
    loss_function = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    model.train()

    def step(index):
        start = (index % 4) * args.batch
        batch, target = inputs[start:start + args.batch], targets[start:start + args.batch]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = loss_function(model(batch), target)
        loss.backward()
        optimizer.step()

    for index in range(WARMUP):
        step(index)
    times = []
    for index in range(args.steps):
        begin = time.perf_counter()
        step(index)
        times.append((time.perf_counter() - begin) * 1e3)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as profiler:
        for index in range(args.steps):
            step(index)
    split = collections.Counter()
    for event in profiler.key_averages(group_by_input_shape=True):
        milliseconds = event.self_cpu_time_total / 1e3 / args.steps
        split[torch_class(event.key, event.input_shapes)] += milliseconds
        split[f"  {event.key}"] += milliseconds
    step_ms = statistics.median(times)
    print(json.dumps({"step_ms": step_ms, "images_per_sec": args.batch * 1e3 / step_ms, "split": dict(split),
                      "version": torch.__version__, "torchvision": torchvision.__version__}))


def profile_torch(args):
    command = [args.torch_python, os.path.abspath(__file__), "--torch-side", "--data", args.data, "--model",
               args.model, "--steps", str(args.steps), "--threads", str(args.threads), "--batch", str(args.batch),
               "--precision", args.precision]
    process = subprocess.run(command, env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)),
                             capture_output=True, text=True)
    lines = [line for line in process.stdout.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        raise SystemExit("PyTorch side failed:\n" + train_runs.tail(process.stdout + process.stderr))
    result = json.loads(lines[-1])
    result["command"] = " ".join(command)
    return result


def print_table(phalanx, torch):
    print(f"{'ms per step':<28}{'phalanx':>10}{'PyTorch':>10}")
    for category in CATEGORIES:
        ours, theirs = phalanx["split"].get(category, 0.0), torch["split"].get(category, 0.0) if torch else 0.0
        if ours or theirs:
            print(f"{category:<28}{ours:>10.2f}{theirs:>10.2f}")
    print(f"{'step (timed, median)':<28}{phalanx['step_ms']:>10.2f}"
          f"{torch['step_ms'] if torch else float('nan'):>10.2f}")
    print(f"{'images/s':<28}{phalanx['images_per_sec']:>10.1f}"
          f"{torch['images_per_sec'] if torch else float('nan'):>10.1f}")
    for name, side in (("phalanx", phalanx), ("PyTorch", torch)):
        if not side:
            continue
        detail = sorted(((value, key) for key, value in side["split"].items() if key.startswith("  ")), reverse=True)
        print(f"\n{name}, largest ops (ms per step):")
        for value, key in detail[:12]:
            print(f"  {value:8.2f} {key.strip()}")


def main(argv=None):
    args = parse_args(argv)
    if args.torch_side:
        torch_side(args)
        return
    args.data = os.path.abspath(args.data)
    with tempfile.TemporaryDirectory(prefix="op_profile.") as workdir:
        phalanx = profile_phalanx(args, workdir)
    torch = profile_torch(args) if args.torch_python else None
    print_table(phalanx, torch)
    if args.output:
        with open(args.output, "w") as file:
            json.dump({"machine": train_runs.machine_info(), "phalanx": phalanx, "torch": torch,
                       "model": args.model, "batch": args.batch, "threads": args.threads,
                       "precision": args.precision}, file, indent=1)


if __name__ == "__main__":
    main()
