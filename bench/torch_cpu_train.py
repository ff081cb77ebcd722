#!/usr/bin/python3
"""PyTorch peers of phalanx's presets on CPU, for throughput comparisons (see bench/README.md). Runs
under any PyTorch >= 1.13 (Debian's python3-torch or a PyPI 2.x venv).

The networks are exact twins of the presets in src/nn/presets.cpp, with the same module names:
  fmnist_cnn  conv1 (1->32, 3x3, pad 1), ReLU, max-pool 2, conv2 (32->64, 3x3, pad 1), ReLU,
              max-pool 2, flatten, fc1 (3136->128), ReLU, fc2 (128->classes)
  resnet20    He et al. 2016, CIFAR variant: conv1 (C->16, 3x3, pad 1, no bias), bn1, ReLU; 3 stages
              of 3 basic blocks (16, 32, 64 channels; the first block of stages 2 and 3 has stride
              2 and a 1x1 conv + batch norm projection shortcut named `shortcut`); each block is
              conv 3x3 (no bias), bn, ReLU, conv 3x3 (no bias), bn, + shortcut, ReLU; global
              average pool, fc (64->classes). Batch norm: momentum 0.1, eps 1e-5 (phalanx's).
  mobilenet_v2, mobilenet_v3_small, efficientnet_b0, resnext50_32x4d
              torchvision's own models (torchvision.models.NAME(num_classes=classes)), whose module
              names and shapes phalanx's presets of the same name share; needs torchvision.
They train on a phalanx HDF5 dataset (/train/images uint8 [N,H,W,C], /train/labels int32, attrs
mean/std on /train/images, class names on /), with the whole training split held in memory,
normalised as phalanx does ((x/255 - mean)/std per channel), a fresh permutation every epoch
(each rank takes its slice of every global batch), and the optimizer, learning rate, label
smoothing and batch the caller gives (the driver passes the phalanx config's values).

  --precision bf16        forward and loss under torch.autocast('cpu', dtype=torch.bfloat16),
                          backward outside it (PyTorch's recipe); weights and optimizer in fp32
  --memory-format channels_last
                          model and every batch in torch.channels_last (NHWC in memory)

Single process:  python bench/torch_cpu_train.py --data D.h5 --threads 2 --batch-size 128
DDP (gloo):      python bench/torch_cpu_train.py --data D.h5 --ddp 2 --threads 1 --batch-size 64
  (--batch-size is always per rank, as phalanx's train.batch_size: the global batch is WORLD x B.)

Timing: each step is timed from fetching its batch to the end of optimizer.step(); the first
--warmup steps and the (optional) evaluation are excluded. images_per_sec = measured steps x
global batch / the largest per-rank sum of measured step times, the same definition phalanx's
summary.json uses. The result is one JSON line on stdout (rank 0 only).
"""

import argparse
import json
import os
import socket
import statistics
import sys
import time

TWIN_MODELS = ("fmnist_cnn", "resnet20")
TORCHVISION_MODELS = ("mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnext50_32x4d")
MODELS = TWIN_MODELS + TORCHVISION_MODELS


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="phalanx HDF5 dataset (phalanx data import-idx / synth ...)")
    parser.add_argument("--model", choices=MODELS, default="fmnist_cnn", help="the phalanx preset to twin")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: torch.autocast('cpu', dtype=torch.bfloat16) around forward and loss")
    parser.add_argument("--memory-format", choices=["nchw", "channels_last"], default="nchw")
    parser.add_argument("--steps", type=int, default=300, help="training steps (like train.max_steps)")
    parser.add_argument("--warmup", type=int, default=5, help="first steps left out of the timing")
    parser.add_argument("--batch-size", type=int, default=128, help="batch per rank (like train.batch_size)")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per process/rank")
    parser.add_argument("--ddp", type=int, default=0, metavar="WORLD",
                        help="run WORLD ranks with DistributedDataParallel over gloo on 127.0.0.1")
    parser.add_argument("--bind", action="store_true",
                        help="with --ddp: pin rank r to CPU cores [r*threads, (r+1)*threads) "
                             "(what mpirun --map-by slot:PE=threads does for phalanx)")
    parser.add_argument("--optimizer", choices=["sgd", "adamw"], default="adamw")
    parser.add_argument("--lr", type=float, default=0.002)
    parser.add_argument("--weight-decay", type=float, default=0.0001)
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    parser.add_argument("--label-smoothing", type=float, default=0.0, help="like train.label_smoothing")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--eval", action="store_true", help="evaluate on /test after training (not timed)")
    parser.add_argument("--port", type=int, default=0, help="gloo rendezvous port (0: pick a free one)")
    args = parser.parse_args(argv)
    if args.steps <= args.warmup:
        parser.error("--steps must be larger than --warmup")
    return args


def build_fmnist_cnn(nn, channels, height, width, classes):
    if (channels, height, width) != (1, 28, 28):
        raise SystemExit(f"torch_cpu_train: fmnist_cnn takes 28x28x1 images, the data has {height}x{width}x{channels}")
    # Module names follow phalanx's parameter names (conv1, conv2, fc1, fc2).
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, classes))


def build_resnet20(nn, channels, height, width, classes):
    if height < 8 or width < 8:
        raise SystemExit(f"torch_cpu_train: resnet20 needs images of at least 8x8, the data has {height}x{width}")

    class BasicBlock(nn.Module):
        # phalanx's basic_block(): projection shortcut (1x1 conv + bn) only where the shape changes.
        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(out_channels)
            self.relu1 = nn.ReLU()
            self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(out_channels)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_channels != out_channels:
                self.shortcut = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride, 0, bias=False),
                                              nn.BatchNorm2d(out_channels))
            self.relu_after = nn.ReLU()

        def forward(self, x):
            main = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
            return self.relu_after(main + self.shortcut(x))

    class ResNet20(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, 16, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.relu = nn.ReLU()
            in_channels = 16
            for stage, out_channels in enumerate((16, 32, 64)):
                blocks = []
                for block in range(3):
                    blocks.append(BasicBlock(in_channels, out_channels, 2 if stage > 0 and block == 0 else 1))
                    in_channels = out_channels
                setattr(self, f"layer{stage + 1}", nn.Sequential(*blocks))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(64, classes)

        def forward(self, x):
            x = self.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet20()


def load_split(torch, path, split, memory_format):
    """The split as normalised float32 [N, C, H, W] in `memory_format`, its int64 labels, and the class count."""
    import h5py
    import numpy as np
    with h5py.File(path, "r") as f:
        images = f[f"/{split}/images"]
        mean = np.asarray(f["/train/images"].attrs["mean"], dtype=np.float32).reshape(-1)
        std = np.asarray(f["/train/images"].attrs["std"], dtype=np.float32).reshape(-1)
        x = images[...]                      # uint8 [N, H, W, C]
        y = f[f"/{split}/labels"][...].astype(np.int64)
        classes = len(f["/"].attrs["classes"])
    x = (x.astype(np.float32) / 255.0 - mean) / std   # per channel, as phalanx: (x/255 - mean)/std
    # The file is NHWC: its transpose is already channels_last; NCHW needs a copy.
    x = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(memory_format=memory_format)
    return x, torch.from_numpy(y), classes


def run(rank, world, args, port, queue):
    """One process (world == 1) or one DDP rank. Rank 0 puts the result on `queue` (or prints it)."""
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if world > 1 and args.bind:
        ncpu = os.cpu_count() or 1
        cores = {(rank * args.threads + t) % ncpu for t in range(args.threads)}
        os.sched_setaffinity(0, cores)
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    memory_format = torch.channels_last if args.memory_format == "channels_last" else torch.contiguous_format

    if world > 1:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)

    x_train, y_train, classes = load_split(torch, args.data, "train", memory_format)
    n, channels, height, width = x_train.shape
    local = args.batch_size
    global_batch = local * world
    steps_per_epoch = n // global_batch
    if steps_per_epoch < 1:
        raise SystemExit(f"torch_cpu_train: {n} training images are fewer than one global batch of {global_batch}")

    if args.model in TORCHVISION_MODELS:
        import torchvision
        model = getattr(torchvision.models, args.model)(num_classes=classes)
        if channels != 3:
            raise SystemExit(f"torch_cpu_train: {args.model} takes 3-channel images, the data has {channels}")
    else:
        builder = build_fmnist_cnn if args.model == "fmnist_cnn" else build_resnet20
        model = builder(torch.nn, channels, height, width, classes)
    model = model.to(memory_format=memory_format)
    parameter_count = sum(p.numel() for p in model.parameters())
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model)
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                    weight_decay=args.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    autocast_enabled = args.precision == "bf16"

    model.train()
    step_times = []
    losses = []
    permutation = None
    wall_start = time.perf_counter()
    for step in range(args.steps):
        t0 = time.perf_counter()
        epoch, in_epoch = divmod(step, steps_per_epoch)
        if in_epoch == 0:
            # Same permutation on every rank (seeded by epoch); rank r takes its slice of each global batch.
            generator = torch.Generator().manual_seed(args.seed * 1000003 + epoch)
            permutation = torch.randperm(n, generator=generator)
        start = in_epoch * global_batch + rank * local
        index = permutation[start:start + local]
        inputs = x_train.index_select(0, index).contiguous(memory_format=memory_format)
        labels = y_train.index_select(0, index)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast_enabled):
            loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        step_times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - wall_start

    measured = step_times[args.warmup:]
    measured_seconds = sum(measured)
    test_accuracy = None
    if args.eval and rank == 0:
        x_test, y_test, _ = load_split(torch, args.data, "test", memory_format)
        net = model.module if world > 1 else model
        net.eval()
        correct = 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast_enabled):
            for i in range(0, x_test.shape[0], 1000):
                correct += (net(x_test[i:i + 1000]).argmax(1) == y_test[i:i + 1000]).sum().item()
        test_accuracy = correct / x_test.shape[0]

    if world > 1:
        import torch.distributed as dist
        # Per-step max over ranks (a synchronous step ends when its slowest rank does), and the
        # slowest rank's total, as phalanx's allreduce_max of measured seconds.
        per_step = torch.tensor(measured, dtype=torch.float64)
        dist.all_reduce(per_step, op=dist.ReduceOp.MAX)
        total = torch.tensor([measured_seconds], dtype=torch.float64)
        dist.all_reduce(total, op=dist.ReduceOp.MAX)
        measured = per_step.tolist()
        measured_seconds = total.item()
        dist.destroy_process_group()

    if rank == 0:
        result = {
            "framework": "pytorch",
            "torch_version": torch.__version__,
            "model": args.model,
            "parameters": parameter_count,
            "precision": args.precision,
            "memory_format": args.memory_format,
            "mode": "ddp" if world > 1 else "single",
            "world_size": world,
            "threads_per_rank": args.threads,
            "bound": bool(world > 1 and args.bind),
            "batch_per_rank": local,
            "global_batch": global_batch,
            "optimizer": args.optimizer,
            "learning_rate": args.lr,
            "label_smoothing": args.label_smoothing,
            "steps": args.steps,
            "warmup_steps": args.warmup,
            "measured_steps": len(measured),
            "images_per_sec": len(measured) * global_batch / measured_seconds,
            "step_ms_median": 1000.0 * statistics.median(measured),
            "step_ms_mean": 1000.0 * measured_seconds / len(measured),
            "wall_seconds": wall,
            "first_loss": losses[0],
            "last_loss": statistics.fmean(losses[-20:]),
            "test_accuracy": test_accuracy,
        }
        if queue is not None:
            queue.put(result)
        else:
            print(json.dumps(result), flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    args = parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch (and its OpenMP) is loaded
    if args.ddp and args.ddp > 1:
        import torch.multiprocessing as mp
        port = args.port or free_port()
        context = mp.get_context("spawn")
        queue = context.SimpleQueue()
        mp.start_processes(run, args=(args.ddp, args, port, queue), nprocs=args.ddp, join=True,
                           start_method="spawn")
        print(json.dumps(queue.get()), flush=True)
    else:
        run(0, 1, args, 0, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
