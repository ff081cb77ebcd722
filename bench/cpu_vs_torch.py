#!/usr/bin/python3
"""phalanx against the PyTorch users install (2.x from PyPI) and Debian's python3-torch, on CPU,
side by side in one run: fmnist_cnn (Fashion-MNIST) and resnet20 (32x32x3), batch 128, and on
request (--models) mobilenet_v2 and efficientnet_b0 at 32x32 and 224x224, batch 64, against
torchvision's models of the same name.

    /usr/bin/python3 bench/cpu_vs_torch.py --phalanx build/src/phalanx --repeats 3 \
        --output /tmp/cpu_vs_torch.json
    /usr/bin/python3 bench/cpu_vs_torch.py --models mobilenet_v2_32,efficientnet_b0_32,\
        mobilenet_v2_224,efficientnet_b0_224 --pairings 1x2 --second-torch none

Columns, per model and pairing (ranks x threads per rank, global batch 128):
  phalanx  fp32, bf16 (--set train.precision=bf16, activations in fp32) and bf16act (bf16 with
           --set train.activation_dtype=bf16: activations held in bf16 between layers, compared
           with PyTorch's bf16 autocast); a build that refuses one on a CPU rank (exit 2) shows
           "refused" with its message
  PyTorch  fp32 and bf16 autocast (torch.autocast('cpu', dtype=torch.bfloat16)), each in NCHW
           and channels_last, under each PyTorch: the 2.x venv (made under build/ with
           `pip install torch torchvision numpy h5py` on first use, then reused) and Debian's
           (--second-torch; its columns of the torchvision models are "n/a" without torchvision)
Pairings:
  1x2  phalanx 1 rank x 2 threads, batch 128     vs PyTorch 1 process x 2 threads, batch 128
  2x1  mpirun -np 2 --map-by slot:PE=1, 1 thread
       per rank, batch 64 per rank                vs PyTorch DDP (gloo) 2 ranks x 1 thread, 64 per rank

Both sides train the same network (bench/torch_cpu_train.py twins the presets) on the same HDF5
file with the same optimizer, learning rate, weight decay, label smoothing, constant schedule,
batch and steps; images/s leave out the first 3 steps on both sides (phalanx's warm-up) and the
evaluation. Each repeat runs every column of every model and pairing back to back, in reverse
order on odd repeats; the tables quote medians over repeats. The headline is phalanx's ratio
against the *fastest* PyTorch 2.x configuration (layout, and pairing for the "best" rows) per
model and precision. The exit status is 1 if a run failed (a phalanx refusal is not a failure).
"""

import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import train_runs
from train_runs import ROOT, median_or_none

# What each model trains with on both sides: the values of its phalanx config (passed to phalanx
# as --set too, so both sides agree even if the config file changes).
MODELS = {
    "fmnist_cnn": {
        "config": "configs/fashion_mnist.yaml",
        "data": "fmnist",
        "steps": 300,
        "optimizer": "adamw", "learning_rate": 0.002, "weight_decay": 0.0001, "momentum": 0.9,
        "label_smoothing": 0.0,
    },
    "resnet20": {
        "config": "configs/resnet20_synth.yaml",
        "data": "synth",
        "steps": 100,
        "optimizer": "sgd", "learning_rate": 0.1, "weight_decay": 0.0001, "momentum": 0.9,
        "label_smoothing": 0.1,
    },
}
# The mobile networks: phalanx's preset against torchvision's model of the same name (the same
# module names and shapes), on synthetic data at CIFAR's and ImageNet's sizes, batch 64 (global).
MOBILE = {"optimizer": "sgd", "learning_rate": 0.05, "weight_decay": 4e-5, "momentum": 0.9,
          "label_smoothing": 0.1, "batch": 64, "config": "configs/resnet20_synth.yaml"}
for preset in ("mobilenet_v2", "efficientnet_b0"):
    MODELS[f"{preset}_32"] = dict(MOBILE, preset=preset, torch_model=preset, data="synth", steps=60)
    MODELS[f"{preset}_224"] = dict(MOBILE, preset=preset, torch_model=preset, data="synth224", steps=20)
DEFAULT_MODELS = ("fmnist_cnn", "resnet20")
# The synthetic 32x32x3 set for resnet20: large enough that a default run (100 steps x 128) stays in
# its first epoch, as the fmnist_cnn run does (300 x 128 < 60,000), so neither evaluates mid-run.
SYNTH_TRAIN, SYNTH_TEST = 16384, 1024
# The 224x224x3 set: one epoch holds a default run (20 steps x 64) and stays small on disk (231 MB).
SYNTH224_TRAIN, SYNTH224_TEST = 1536, 64
PAIRINGS = {"1x2": (1, 2), "2x1": (2, 1)}  # name -> (ranks, threads per rank)
PRECISIONS = ("fp32", "bf16", "bf16act")  # bf16act: phalanx only, against PyTorch's bf16
LAYOUTS = ("nchw", "channels_last")
PHALANX_WARMUP = 3  # TrainingRecord::warmup_steps: the steps summary.json's images_per_sec leaves out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--phalanx", default=os.path.join(ROOT, "build", "src", "phalanx"))
    p.add_argument("--baseline", action="append", default=[], metavar="NAME=PATH",
                   help="another phalanx binary measured beside --phalanx in the same rounds (e.g. the build "
                        "before a change); repeatable; its columns are 'phalanx@NAME PRECISION'")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma list of " + ",".join(MODELS))
    p.add_argument("--pairings", default=",".join(PAIRINGS), help="comma list of " + ",".join(PAIRINGS))
    p.add_argument("--precisions", default=",".join(PRECISIONS), help="comma list of " + ",".join(PRECISIONS))
    p.add_argument("--layouts", default=",".join(LAYOUTS), help="PyTorch memory formats: " + ",".join(LAYOUTS))
    p.add_argument("--batch", type=int, default=None,
                   help="global batch (per rank: batch / ranks); default 128, 64 for the mobile networks")
    p.add_argument("--steps", type=int, default=None,
                   help="training steps per run for every model (default: fmnist_cnn 300, resnet20 100)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--venv", default=os.path.join(ROOT, "build", "torch-venv"),
                   help="the PyTorch 2.x venv: reused when it imports torch, numpy and h5py, else made")
    p.add_argument("--venv-python", default=sys.executable, help="the python that makes the venv")
    p.add_argument("--pip-args", default="",
                   help="extra pip install arguments, e.g. '--index-url https://download.pytorch.org/whl/cpu'")
    p.add_argument("--second-torch", default="/usr/bin/python3",
                   help="a python with another PyTorch (Debian's python3-torch) for a second column; 'none' skips it")
    p.add_argument("--fmnist-data", default=os.path.join(ROOT, "datasets", "fashion-mnist.h5"),
                   help="phalanx Fashion-MNIST file; imported from --fmnist-idx when missing")
    p.add_argument("--fmnist-idx", default="/usr/share/datasets/fashion-mnist", help="Fashion-MNIST IDX files")
    p.add_argument("--synth224-data", default=os.path.join(ROOT, "datasets", "bench-synth224x224x3.h5"),
                   help="synthetic 224x224x3 set of the *_224 models (made with phalanx data synth if missing)")
    p.add_argument("--synth-data", default=os.path.join(ROOT, "datasets", "bench-synth32x32x3.h5"),
                   help=f"32x32x3 file for resnet20; made with phalanx data synth ({SYNTH_TRAIN} train) when missing")
    p.add_argument("--no-bind-ddp", action="store_true",
                   help="do not pin PyTorch DDP ranks to one core each (phalanx's mpirun pins)")
    p.add_argument("--work-dir", default=None, help="where run directories go (default: a temp dir)")
    p.add_argument("--keep-runs", action="store_true", help="keep phalanx run directories")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    p.add_argument("--output", default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    for name, known in (("models", MODELS), ("pairings", PAIRINGS), ("precisions", PRECISIONS),
                        ("layouts", LAYOUTS)):
        chosen = [x.strip() for x in getattr(args, name).split(",") if x.strip()]
        unknown = [x for x in chosen if x not in known]
        if unknown or not chosen:
            p.error(f"--{name}: unknown or empty {unknown or chosen} (known: {', '.join(known)})")
        setattr(args, name, chosen)
    if args.batch is not None and args.batch % max(PAIRINGS[x][0] for x in args.pairings):
        p.error(f"--batch {args.batch} does not divide over the ranks of the pairings")
    if args.steps is not None and args.steps <= PHALANX_WARMUP:
        p.error(f"--steps must be larger than the {PHALANX_WARMUP} warm-up steps")
    return args


def log(message):
    print(message, file=sys.stderr, flush=True)


def needs_torchvision(args):
    return any("torch_model" in MODELS[m] for m in args.models)


def has_torchvision(python):
    return subprocess.run([python, "-c", "import torchvision"], capture_output=True).returncode == 0


def ensure_venv(args):
    """The venv's python, with torch, numpy and h5py (and torchvision for the mobile networks):
    reused when it has them, else made and filled."""
    python = os.path.join(args.venv, "bin", "python")
    packages = ["torch", "numpy", "h5py"] + (["torchvision"] if needs_torchvision(args) else [])
    check = [python, "-c", "import " + ", ".join(packages)]
    if os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    if not os.path.exists(python):
        log(f"cpu_vs_torch: making the PyTorch venv {args.venv}")
        made = subprocess.run([args.venv_python, "-m", "venv", args.venv], capture_output=True, text=True)
        if made.returncode != 0:
            raise SystemExit(f"cpu_vs_torch: '{args.venv_python} -m venv {args.venv}' failed (on Debian: "
                             f"apt-get install python3-venv):\n{made.stderr.strip()}")
    log(f"cpu_vs_torch: pip install {' '.join(packages)} into {args.venv} (a few GB, once)")
    install = [python, "-m", "pip", "install", "--upgrade", "pip"] + packages
    install += shlex.split(args.pip_args)
    if subprocess.run(install, stdout=sys.stderr).returncode != 0:
        raise SystemExit(f"cpu_vs_torch: pip install into {args.venv} failed (see above); "
                         f"the venv is kept, the next run retries the install")
    if subprocess.run(check, capture_output=True).returncode != 0:
        raise SystemExit(f"cpu_vs_torch: {python} still cannot import {', '.join(packages)}")
    return python


def ensure_data(args, model):
    """The model's HDF5 file, made with phalanx's own importers when missing (written under a
    temporary name first, so an interrupted import leaves nothing that looks finished)."""
    if MODELS[model]["data"] == "fmnist":
        path = os.path.abspath(args.fmnist_data)
        make = ["data", "import-idx", args.fmnist_idx, "--classes", "fashion"]
    elif MODELS[model]["data"] == "synth224":
        path = os.path.abspath(args.synth224_data)
        make = ["data", "synth", "--train", str(SYNTH224_TRAIN), "--test", str(SYNTH224_TEST),
                "--height", "224", "--width", "224", "--channels", "3"]
    else:
        path = os.path.abspath(args.synth_data)
        make = ["data", "synth", "--train", str(SYNTH_TRAIN), "--test", str(SYNTH_TEST),
                "--height", "32", "--width", "32", "--channels", "3"]
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".partial.h5"
    log(f"cpu_vs_torch: making {path}")
    made = subprocess.run([args.phalanx] + make + ["-o", partial], capture_output=True, text=True)
    if made.returncode != 0:
        if os.path.exists(partial):
            os.remove(partial)
        raise SystemExit(f"cpu_vs_torch: could not make {path}:\n{(made.stdout + made.stderr).strip()}")
    os.replace(partial, path)
    return path


class Column:
    """One configuration of one framework: what a row of the tables shows."""

    def __init__(self, framework, precision, layout=None, python=None, version=None, binary=None, label=None,
                 torchvision=True):
        self.framework, self.precision, self.layout = framework, precision, layout
        self.torchvision = torchvision  # a PyTorch column: whether its python has torchvision
        self.python, self.version = python, version
        self.binary, self.label = binary, label  # phalanx: which binary (label: a --baseline's name)

    @property
    def key(self):
        if self.framework == "phalanx":
            return f"phalanx@{self.label} {self.precision}" if self.label else f"phalanx {self.precision}"
        return f"torch {self.version} {self.precision} {self.layout}"


def torch_precision(precision):
    """The PyTorch column a phalanx precision is compared with (bf16act: autocast's bf16)."""
    return "bf16" if precision == "bf16act" else precision


def phalanx_sets(args, model, data, ranks, threads, precision):
    spec = MODELS[model]
    sets = {
        "device": "cpu",
        "threads": threads,
        "data.path": data,
        "train.batch_size": batch_of(args, model) // ranks,
        "train.max_steps": steps_of(args, model),
        "train.epochs": 1000,
        "train.log_every_steps": 100,
        "train.label_smoothing": spec["label_smoothing"],
        "optimizer.type": spec["optimizer"],
        "optimizer.learning_rate": spec["learning_rate"],
        "optimizer.weight_decay": spec["weight_decay"],
        "schedule.type": "constant",
        "schedule.warmup_epochs": 0,
        "checkpoint.every_steps": 0,
    }
    if spec["optimizer"] == "sgd":
        sets["optimizer.momentum"] = spec["momentum"]
    if "preset" in spec:
        sets["model.preset"] = spec["preset"]
    # Named in every column: the configs may say auto (configs/fashion_mnist.yaml does), which would
    # make the fp32 column bf16 on a CPU with bf16 instructions. bf16: bf16 compute (operands of
    # convolutions and linear layers); activations in fp32, or in bf16 for bf16act.
    sets["train.precision"] = "fp32" if precision == "fp32" else "bf16"
    sets["train.activation_dtype"] = "bf16" if precision == "bf16act" else "fp32"
    return sets


def torch_options(args, model, data, ranks, column):
    spec = MODELS[model]
    return ["--model", spec.get("torch_model", model), "--data", data, "--precision", column.precision,
            "--memory-format", column.layout, "--steps", steps_of(args, model), "--warmup", PHALANX_WARMUP,
            "--batch-size", batch_of(args, model) // ranks,
            "--optimizer", spec["optimizer"], "--lr", spec["learning_rate"], "--weight-decay", spec["weight_decay"],
            "--momentum", spec["momentum"], "--label-smoothing", spec["label_smoothing"], "--eval"]


def batch_of(args, model):
    return args.batch if args.batch is not None else MODELS[model].get("batch", 128)


def steps_of(args, model):
    return args.steps if args.steps is not None else MODELS[model]["steps"]


def run_column(args, model, data, pairing, column, run_dir):
    ranks, threads = PAIRINGS[pairing]
    if column.framework == "torch" and "torch_model" in MODELS[model] and not column.torchvision:
        return {"skipped": f"{column.python} has no torchvision"}
    if column.framework == "phalanx":
        config = os.path.join(ROOT, MODELS[model]["config"])
        sets = phalanx_sets(args, model, data, ranks, threads, column.precision)
        return train_runs.run_phalanx(column.binary, config, sets, ranks, threads, run_dir, args.mpirun, args.timeout)
    return train_runs.run_torch(column.python, torch_options(args, model, data, ranks, column), ranks, threads,
                                not args.no_bind_ddp, args.timeout)


def summarise_cell(results):
    """Medians over repeats of one column at one model and pairing."""
    ok = [r for r in results if "error" not in r and "skipped" not in r]
    refused = [r for r in results if "refused" in r]
    cell = {
        "images_per_sec": [r["images_per_sec"] for r in ok],
        "median": median_or_none([r["images_per_sec"] for r in ok]),
        "failures": sum(1 for r in results if "error" in r and "refused" not in r),
        "refusals": len(refused),
        "skipped": sum(1 for r in results if "skipped" in r),
        "test_accuracy": median_or_none([r.get("test_accuracy") for r in ok]),
    }
    if refused:
        cell["refused"] = refused[0]["refused"]
    errors = [r["error"] for r in results if "error" in r and "refused" not in r]
    if errors:
        cell["first_error"] = errors[0]
    step_ms = [r.get("step_ms_median") or r.get("step_ms_mean") for r in ok]
    cell["step_ms"] = median_or_none(step_ms)
    if ok and "time_breakdown" in ok[0]:
        cell["phalanx_shares"] = {
            stage: median_or_none([r["time_breakdown"].get(stage, {}).get("share") for r in ok])
            for stage in train_runs.STAGES}
    return cell


def fastest(cells, candidates):
    """(median, (column key, pairing)) of the fastest candidate with a median, or (None, None)."""
    best = (None, None)
    for key, pairing in candidates:
        value = cells.get(key, {}).get(pairing, {}).get("median")
        if value is not None and (best[0] is None or value > best[0]):
            best = (value, (key, pairing))
    return best


def headline(args, model, cells, columns, peer_version):
    """phalanx's ratio against the fastest configuration of the peer PyTorch, per precision and
    pairing, over the pairings ("best"), and fastest against fastest over both precisions."""
    rows = []
    peer = [c for c in columns if c.framework == "torch" and c.version == peer_version]

    def row(precision, pairing, phalanx_candidates, torch_candidates):
        phalanx_value, phalanx_where = fastest(cells, phalanx_candidates)
        torch_value, torch_where = fastest(cells, torch_candidates)
        entry = {"model": model, "precision": precision, "pairing": pairing,
                 "phalanx": phalanx_value, "phalanx_config": phalanx_where,
                 "torch": torch_value, "torch_config": torch_where, "torch_version": peer_version}
        refusals = {cells[k][p].get("refused") for k, p in phalanx_candidates
                    if cells.get(k, {}).get(p, {}).get("refused")}
        if phalanx_value is None and refusals:
            entry["phalanx_refused"] = sorted(refusals)[0]
        if phalanx_value and torch_value:
            entry["ratio"] = phalanx_value / torch_value
        rows.append(entry)

    for precision in args.precisions:
        phalanx_key = f"phalanx {precision}"
        torch_keys = [c.key for c in peer if c.precision == torch_precision(precision)]
        for pairing in args.pairings:
            row(precision, pairing, [(phalanx_key, pairing)], [(k, pairing) for k in torch_keys])
        if len(args.pairings) > 1:
            row(precision, "best", [(phalanx_key, p) for p in args.pairings],
                [(k, p) for k in torch_keys for p in args.pairings])
    if len(args.precisions) > 1:
        row("any", "best", [(f"phalanx {q}", p) for q in args.precisions for p in args.pairings],
            [(c.key, p) for c in peer for p in args.pairings])
    return rows


def fmt(value, spec="{:,.0f}"):
    return "—" if value is None else spec.format(value)


def print_tables(results, columns):
    for model in results["models"]:
        m = results["per_model"][model]
        print()
        print(f"{model}: global batch {m['batch']}, {m['steps']} steps; images/s, median of "
              f"{results['repeats']} repeat(s)")
        print(f"{'':<40}" + "".join(f"{p:>14}" for p in results["pairings"]))
        for column in columns:
            line = f"{column.key:<40}"
            for pairing in results["pairings"]:
                cell = m["cells"][column.key][pairing]
                if cell["median"] is not None:
                    text = fmt(cell["median"])
                elif cell["refusals"]:
                    text = "refused"
                elif cell["skipped"]:
                    text = "n/a"
                else:
                    text = "FAILED"
                line += f"{text:>14}"
            print(line)
    print()
    for info in results["torch"]:
        print(f"PyTorch {info['version']} ({info['python']}): BLAS {info.get('blas')}, oneDNN {info.get('onednn')}, "
              f"CPU kernels {info.get('cpu_capability')}")
    peer = results["peer_torch_version"]
    print(f"headline: phalanx / the fastest PyTorch {peer} configuration (median images/s)")
    print(f"{'model':<20}{'precision':<11}{'pairing':<9}{'phalanx':<22}{'PyTorch fastest':<36}{'ratio':>8}")
    refusals = {}
    for entry in results["headline"]:
        where = entry["torch_config"]
        torch_text = f"{fmt(entry['torch'])} ({where[0].split(' ', 2)[2]}, {where[1]})" if where else "—"
        phalanx_text = fmt(entry["phalanx"])
        if entry["phalanx"] is None and entry.get("phalanx_refused"):
            phalanx_text = "refused"
            refusals[entry["phalanx_refused"]] = True
        elif entry["phalanx_config"] and entry["pairing"] == "best":
            phalanx_text += f" ({entry['phalanx_config'][0].split(' ')[1]}, {entry['phalanx_config'][1]})"
        print(f"{entry['model']:<20}{entry['precision']:<11}{entry['pairing']:<9}{phalanx_text:<22}"
              f"{torch_text:<36}{fmt(entry.get('ratio'), '{:.2f}x'):>8}")
    for message in refusals:
        print(f"phalanx refused: {message}")
    for model in results["models"]:
        for key, by_pairing in results["per_model"][model]["cells"].items():
            for pairing, cell in by_pairing.items():
                if cell["failures"]:
                    print(f"\nFAILED {model} {pairing} {key}: {cell['failures']} run(s)")
                    if cell.get("first_error"):
                        print("    " + cell["first_error"].replace("\n", "\n    "))
    for model in results["models"]:
        cells = results["per_model"][model]["cells"]
        for key in cells:
            if not key.startswith("phalanx@"):
                continue
            label, precision = key[len("phalanx@"):].split(" ", 1)
            for pairing, cell in cells[key].items():
                new = cells.get(f"phalanx {precision}", {}).get(pairing, {}).get("median")
                old = cell.get("median")
                ratio = f"{new / old:.2f}x" if new and old else "—"
                print(f"{model:<20}{precision:<9}{pairing:<6} phalanx {fmt(new)} vs {label} {fmt(old)}: {ratio}")
    print(f"\nload average (1, 5, 15 min) at start {', '.join(f'{x:.2f}' for x in results['load_average_start'])}, "
          f"at end {', '.join(f'{x:.2f}' for x in results['load_average_end'])}; "
          f"{results['elapsed_seconds'] / 60:.1f} min")


def main(argv=None):
    args = parse_args(argv)
    args.phalanx = os.path.abspath(args.phalanx)
    if not os.path.exists(args.phalanx):
        print(f"cpu_vs_torch: phalanx binary not found: {args.phalanx}", file=sys.stderr)
        return 2
    started_clock = time.monotonic()
    venv_python = ensure_venv(args)
    pythons = [venv_python]
    if args.second_torch and args.second_torch != "none":
        pythons.append(args.second_torch)
    infos = []
    for python in pythons:
        info = train_runs.torch_info(python)
        if info is None:
            print(f"cpu_vs_torch: {python} has no working torch (--second-torch none skips the second column)",
                  file=sys.stderr)
            return 2
        infos.append(dict(info, python=python))
    versions = [info["version"] for info in infos]
    if len(set(versions)) < len(versions):
        print(f"cpu_vs_torch: both pythons have PyTorch {versions[0]}; nothing to compare", file=sys.stderr)
        return 2
    if not versions[0].startswith("2."):
        log(f"cpu_vs_torch: warning: the venv has PyTorch {versions[0]}, not 2.x")
    data = {model: ensure_data(args, model) for model in args.models}

    columns = [Column("phalanx", p, binary=args.phalanx) for p in args.precisions]
    for baseline in args.baseline:
        name, _, path = baseline.partition("=")
        if not name or not os.path.exists(path):
            print(f"cpu_vs_torch: --baseline {baseline}: expected NAME=PATH of a phalanx binary", file=sys.stderr)
            return 2
        columns += [Column("phalanx", p, binary=os.path.abspath(path), label=name) for p in args.precisions]
    for python, version in zip(pythons, versions):
        vision = has_torchvision(python) if needs_torchvision(args) else True
        columns += [Column("torch", p, layout, python, version, torchvision=vision)
                    for p in dict.fromkeys(map(torch_precision, args.precisions)) for layout in args.layouts]

    work = args.work_dir or tempfile.mkdtemp(prefix="cpu-vs-torch-")
    os.makedirs(work, exist_ok=True)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    load_start = os.getloadavg()  # other work on the machine skews everything: record it
    runs = {m: {c.key: {p: [] for p in args.pairings} for c in columns} for m in args.models}
    for repeat in range(args.repeats):
        for model in args.models:
            for pairing in args.pairings:
                # Reverse order on odd repeats, so drift of a noisy machine hits every column alike.
                order = columns if repeat % 2 == 0 else list(reversed(columns))
                for column in order:
                    run_dir = os.path.join(work, f"{model}-{pairing}-{column.key.replace(' ', '-')}-r{repeat}")
                    shutil.rmtree(run_dir, ignore_errors=True)
                    result = run_column(args, model, data[model], pairing, column, run_dir)
                    result["repeat"] = repeat
                    runs[model][column.key][pairing].append(result)
                    if not args.keep_runs:
                        shutil.rmtree(run_dir, ignore_errors=True)
                    status = ("n/a" if "skipped" in result
                              else f"{result['images_per_sec']:,.0f} img/s" if "error" not in result
                              else "refused" if "refused" in result else "FAILED")
                    log(f"[repeat {repeat + 1}/{args.repeats}] {model:<20} {pairing} {column.key:<36} {status}")

    results = {
        "benchmark": "CPU training throughput, phalanx vs PyTorch 2.x (PyPI) and a second PyTorch",
        "started": started,
        "command": " ".join([sys.executable] + (argv if argv is not None else sys.argv)),
        "machine": train_runs.machine_info(args.mpirun),
        "torch": infos,
        "peer_torch_version": versions[0],
        "batch": args.batch if args.batch is not None else "per model",
        "repeats": args.repeats,
        "warmup_steps": PHALANX_WARMUP,
        "models": args.models,
        "pairings": args.pairings,
        "per_model": {},
        "headline": [],
        "runs": runs,
    }
    for model in args.models:
        cells = {key: {p: summarise_cell(runs[model][key][p]) for p in args.pairings} for key in runs[model]}
        results["per_model"][model] = {"steps": steps_of(args, model), "batch": batch_of(args, model),
                                       "data": data[model],
                                       "train": {k: v for k, v in MODELS[model].items() if k not in ("data",)},
                                       "cells": cells}
        results["headline"] += headline(args, model, cells, columns, versions[0])
    results["load_average_end"] = os.getloadavg()
    results["load_average_start"] = load_start
    results["elapsed_seconds"] = time.monotonic() - started_clock
    print_tables(results, columns)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(results, f, indent=2)
        print(f"\nwrote {args.output}")
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    failed = any(cell["failures"] for m in results["per_model"].values()
                 for by_pairing in m["cells"].values() for cell in by_pairing.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
