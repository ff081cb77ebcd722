#!/usr/bin/env python3
"""The sweep peer: Optuna with PyTorch on the CPU, on a phalanx sweep file's search space, budget
and data, for side-by-side comparisons with `phalanx sweep` (docs/BENCHMARKS.md, "Sweeps").

What users run in place of a phalanx sweep: Optuna's default TPE sampler (or its random sampler)
with its SuccessiveHalvingPruner, N worker processes sharing one SQLite study, each training one
trial at a time with PyTorch on its own core(s). The sweep file gives what both sides search:
  space     its float/loguniform/int/choice keys (optimizer.learning_rate, optimizer.weight_decay,
            train.batch_size, model.preset are the ones the twins understand)
  budget    epochs: min, max and eta -> SuccessiveHalvingPruner(min_resource=min,
            reduction_factor=eta); every trial's schedule spans budget.max epochs, as phalanx's
            rungs are prefixes of one trajectory
  trials    the total number of trials over all workers
  seed      TPE's seed (worker w seeds its sampler with seed + 1000 w, so workers do not propose
            twins, and the sweeps of nearby seeds do not share a worker's draws)
and its base config the rest: AdamW or SGD, the one-cycle or cosine schedule, label smoothing.
Models are twins of phalanx's presets (bench/torch_cpu_train.py: fmnist_cnn; lenet5 here).

    python bench/optuna_peer.py --data datasets/fashion-mnist.h5 --workers 2 \\
        --sampler tpe --precision bf16 --memory-format channels_last configs/sweeps/fmnist_asha.yaml

Reports one JSON line: the best test accuracy, the wall time, and every finished or pruned trial's
end (seconds since the start) with the best accuracy so far, from which "the accuracy reached by
time T" is read. Needs optuna 5.x, torch 2.x, h5py, pyyaml.
"""

import argparse
import json
import math
import multiprocessing
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import yaml  # noqa: E402

import torch_cpu_train as twins  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", help="a phalanx sweep file (configs/sweeps/fmnist_asha.yaml)")
    parser.add_argument("--data", required=True, help="phalanx HDF5 dataset (the sweep's base config's data)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes sharing the study")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument("--sampler", choices=["tpe", "random"], default="tpe")
    parser.add_argument("--pruner", choices=["successive_halving", "none"], default="successive_halving")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--memory-format", choices=["nchw", "channels_last"], default="channels_last")
    parser.add_argument("--seed", type=int, default=None, help="sampler seed (default: the sweep's)")
    parser.add_argument("--storage", default=None, help="SQLite file (default: a temporary one)")
    parser.add_argument("--output", default=None, help="also write the JSON result here")
    return parser.parse_args(argv)


def build_lenet5(nn, channels, height, width, classes):
    # phalanx's lenet5 preset: padding 2 on 28x28 gives the original 32x32 field.
    if height != width or height not in (28, 32):
        raise SystemExit(f"optuna_peer: lenet5 takes 28x28 or 32x32 images, the data has {height}x{width}")
    return nn.Sequential(
        nn.Conv2d(channels, 6, 5, padding=2 if height == 28 else 0), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, classes))


def read_sweep(path):
    with open(path) as stream:
        sweep = yaml.safe_load(stream)
    base_path = os.path.join(os.path.dirname(os.path.abspath(path)), sweep["config"])
    with open(base_path) as stream:
        base = yaml.safe_load(stream)
    for assignment in sweep.get("set", []):  # base-config overrides KEY=VALUE
        key, _, value = assignment.partition("=")
        node = base
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(value)
    budget = sweep.get("budget", {})
    if budget.get("unit", "epochs") != "epochs":
        raise SystemExit(f"optuna_peer: {path}: budget.unit must be epochs")
    return sweep, base


def suggest(trial, space):
    values = {}
    for key, spec in space.items():
        kind = spec["type"]
        if kind == "loguniform":
            values[key] = trial.suggest_float(key, spec["low"], spec["high"], log=True)
        elif kind == "uniform":
            values[key] = trial.suggest_float(key, spec["low"], spec["high"])
        elif kind == "int":
            values[key] = trial.suggest_int(key, spec["low"], spec["high"])
        elif kind == "choice":
            values[key] = trial.suggest_categorical(key, spec["values"])
        else:
            raise SystemExit(f"optuna_peer: space.{key}: type {kind} is not supported here")
    return values


def objective_factory(args, sweep, base, data, start):
    import optuna
    import torch

    x_train, y_train, x_test, y_test, classes = data
    max_epochs = int(sweep["budget"]["max"])
    optimizer_config = base.get("optimizer", {})
    schedule_config = base.get("schedule", {})
    train_config = base.get("train", {})
    memory_format = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format
    autocast = args.precision == "bf16"

    def objective(trial):
        values = suggest(trial, sweep["space"])
        preset = values.get("model.preset", base.get("model", {}).get("preset", "fmnist_cnn"))
        batch = int(values.get("train.batch_size", train_config.get("batch_size", 64)))
        lr = float(values.get("optimizer.learning_rate", optimizer_config.get("learning_rate", 0.001)))
        weight_decay = float(values.get("optimizer.weight_decay", optimizer_config.get("weight_decay", 0.0)))
        torch.manual_seed(trial.number)
        n, channels, height, width = x_train.shape
        builder = build_lenet5 if preset == "lenet5" else twins.build_fmnist_cnn
        model = builder(torch.nn, channels, height, width, classes).to(memory_format=memory_format)
        if optimizer_config.get("type", "adamw") == "adamw":
            optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        else:
            optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=optimizer_config.get("momentum", 0.9),
                                        weight_decay=weight_decay)
        steps_per_epoch = n // batch
        total_steps = steps_per_epoch * max_epochs
        if schedule_config.get("type") == "one_cycle":
            scheduler = torch.optim.lr_scheduler.OneCycleLR(
                optimizer, max_lr=lr, total_steps=total_steps,
                pct_start=float(schedule_config.get("one_cycle_peak_fraction", 0.3)))
        else:
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
        loss_function = torch.nn.CrossEntropyLoss(label_smoothing=float(train_config.get("label_smoothing", 0.0)))
        accuracy = 0.0
        for epoch in range(max_epochs):
            model.train()
            generator = torch.Generator().manual_seed(trial.number * 1000003 + epoch)
            permutation = torch.randperm(n, generator=generator)
            for step in range(steps_per_epoch):
                index = permutation[step * batch:(step + 1) * batch]
                inputs = x_train.index_select(0, index).contiguous(memory_format=memory_format)
                optimizer.zero_grad(set_to_none=True)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                    loss = loss_function(model(inputs), y_train.index_select(0, index))
                loss.backward()
                optimizer.step()
                scheduler.step()
            model.eval()
            correct = 0
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                for i in range(0, x_test.shape[0], 1000):
                    correct += (model(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum().item()
            accuracy = correct / x_test.shape[0]
            trial.report(accuracy, epoch + 1)
            trial.set_user_attr("seconds", time.time() - start)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return accuracy

    return objective


def worker(index, args, sweep, base, storage, study_name, start):
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import optuna
    import torch
    torch.set_num_threads(args.threads)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    memory_format = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format
    x_train, y_train, classes = twins.load_split(torch, args.data, "train", memory_format)
    x_test, y_test, _ = twins.load_split(torch, args.data, "test", memory_format)
    # Seed + w would give worker 1 of seed S the draws of worker 0 of seed S + 1: sweeps of
    # consecutive seeds would then share half their random start-up trials.
    seed = (args.seed if args.seed is not None else int(sweep.get("seed", 0))) + 1000 * index
    sampler = optuna.samplers.TPESampler(seed=seed) if args.sampler == "tpe" else optuna.samplers.RandomSampler(seed)
    study = optuna.load_study(study_name=study_name, storage=storage, sampler=sampler)
    objective = objective_factory(args, sweep, base, (x_train, y_train, x_test, y_test, classes), start)
    # MaxTrialsCallback counts every worker's trials: the sweep's total, not each worker's.
    limit = optuna.study.MaxTrialsCallback(int(sweep["trials"]), states=None)
    study.optimize(objective, n_trials=int(sweep["trials"]), callbacks=[limit])


def main(argv=None):
    args = parse_args(argv)
    import optuna
    sweep, base = read_sweep(args.sweep)
    budget = sweep["budget"]
    directory = tempfile.mkdtemp(prefix="optuna-peer-")
    storage_path = args.storage or os.path.join(directory, "study.db")
    storage = f"sqlite:///{storage_path}"
    if args.pruner == "successive_halving":
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=int(budget["min"]),
                                                        reduction_factor=int(budget.get("eta", 3)))
    else:
        pruner = optuna.pruners.NopPruner()
    direction = "maximize" if sweep.get("goal", "maximize") == "maximize" else "minimize"
    study_name = f"{sweep['name']}-{args.sampler}-{os.getpid()}"
    optuna.create_study(study_name=study_name, storage=storage, direction=direction, pruner=pruner)
    start = time.time()
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=worker, args=(w, args, sweep, base, storage, study_name, start))
                 for w in range(args.workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    wall = time.time() - start
    if any(process.exitcode != 0 for process in processes):
        raise SystemExit("optuna_peer: a worker failed")
    study = optuna.load_study(study_name=study_name, storage=storage)
    ends = []
    for trial in study.trials:
        if trial.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED):
            last = trial.value if trial.value is not None else max(trial.intermediate_values.values(),
                                                                   default=math.nan)
            ends.append({"trial": trial.number, "state": trial.state.name.lower(),
                         "seconds": trial.user_attrs.get("seconds"), "value": last,
                         "epochs": max(trial.intermediate_values, default=0), "params": trial.params})
    ends.sort(key=lambda end: end["seconds"] or 0.0)
    best = -math.inf if direction == "maximize" else math.inf
    for end in ends:
        # Only a trial trained to the full budget counts as a result, as phalanx's best trial.
        if end["state"] == "complete" and end["value"] is not None:
            best = max(best, end["value"]) if direction == "maximize" else min(best, end["value"])
        end["best_so_far"] = best if math.isfinite(best) else None
    import torch
    result = {"framework": "optuna", "optuna_version": optuna.__version__, "torch_version": torch.__version__,
              "sampler": args.sampler, "pruner": args.pruner, "workers": args.workers, "threads": args.threads,
              "precision": args.precision, "memory_format": args.memory_format, "trials": len(ends),
              "epochs_trained": sum(end["epochs"] for end in ends), "wall_seconds": wall,
              "best": best if math.isfinite(best) else None, "ends": ends}
    line = json.dumps(result)
    print(line, flush=True)
    if args.output:
        with open(args.output, "w") as stream:
            stream.write(line + "\n")


if __name__ == "__main__":
    main()
