#!/usr/bin/env python3
"""PyTorch peer of phalanx's `resnet50` preset for the GPU throughput comparison (launch/gpu-check.sh).

The network is torchvision's resnet50 (v1.5 bottlenecks, 25,557,032 parameters at 1000 classes),
defined here in plain torch so the comparison runs where torchvision is missing; --torchvision
uses torchvision's own model instead, when it is installed. Training as the PyTorch eager
baseline of issue 3: channels_last, bf16 autocast, SGD with momentum 0.9, batch 256, synthetic
data already on the device (images and labels drawn once), so the baseline pays no input cost.

  python3 bench/torch_resnet50.py --batch-size 256 --steps 30 --warmup 10

Timing: every step (forward, loss, backward, optimizer step) is timed with CUDA events (or the
wall clock on the CPU) after --warmup untimed steps; images_per_sec = batch / median step time.
The result is one JSON line on stdout.
"""

import argparse
import json
import statistics
import time

import torch
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels, width, stride):
        super().__init__()
        out_channels = width * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_channels))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels = 64
        for index, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
            layers = []
            for block in range(blocks):
                layers.append(Bottleneck(in_channels, width, 2 if index > 0 and block == 0 else 1))
                in_channels = width * Bottleneck.expansion
            setattr(self, f"layer{index + 1}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_channels, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_model(classes, use_torchvision):
    if use_torchvision:
        import torchvision  # only with --torchvision: the plain definition above needs nothing beyond torch

        return torchvision.models.resnet50(num_classes=classes), "torchvision.models.resnet50"
    return ResNet50(classes), "bench/torch_resnet50.py ResNet50 (torchvision's architecture)"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first (cuDNN autotuning)")
    parser.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--torchvision", action="store_true", help="use torchvision's resnet50")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch_size < 1:
        parser.error("--steps >= 1, --warmup >= 0 and --batch-size >= 1 are needed")

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    if on_gpu:
        torch.backends.cudnn.benchmark = True
    model, model_source = build_model(args.classes, args.torchvision)
    model = model.to(device, memory_format=torch.channels_last)
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_function = nn.CrossEntropyLoss()
    images = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, args.classes, (args.batch_size,), device=device)
    autocast_dtype = torch.bfloat16 if args.precision == "bf16" else None

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast_dtype is not None):
            loss = loss_function(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss

    model.train()
    for _ in range(args.warmup):
        step()
    if on_gpu:
        torch.cuda.synchronize()
    seconds = []
    for _ in range(args.steps):
        if on_gpu:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step()
            end.record()
            end.synchronize()
            seconds.append(start.elapsed_time(end) / 1000.0)
        else:
            begin = time.perf_counter()
            loss = step()
            seconds.append(time.perf_counter() - begin)
    median = statistics.median(seconds)
    print(json.dumps({
        "framework": "pytorch " + torch.__version__,
        "model": model_source,
        "parameters": parameters,
        "device": torch.cuda.get_device_name(device) if on_gpu else "cpu",
        "precision": args.precision,
        "batch_size": args.batch_size,
        "image_size": args.image_size,
        "warmup_steps": args.warmup,
        "timed_steps": args.steps,
        "median_step_seconds": median,
        "images_per_sec": args.batch_size / median,
        "final_loss": float(loss.detach().float().cpu()),
        "peak_memory_mib": torch.cuda.max_memory_allocated(device) / 2**20 if on_gpu else None,
    }))


if __name__ == "__main__":
    main()
