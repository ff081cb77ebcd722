#!/usr/bin/env python3
# Writes the golden files of the preset parity test (test_preset_parity.cpp): each preset's
# PyTorch twin (torchvision's model where torchvision has it, a definition below where it does
# not), filled with values a counter-based hash gives, one training-mode forward and backward on a
# fixed batch, and a summary of the result small enough to commit (logits, loss, per parameter the
# gradient's sum, absolute sum, L2 norm and a few elements; per batch-norm buffer the same after
# the forward's running-statistics update).
# The step runs in fp64 from the fp32 values (the golden values: exact up to fp64 rounding) and
# again in fp32; how far PyTorch's own fp32 step lands from the golden one is written into the
# file ("torch_float32_discrepancy"), the yardstick for the test's tolerances.
#
# CI has no PyTorch: the golden files are committed and this script documents how they were made.
# Rerun it after a preset changes on purpose:
#   python3 tests/parity/make_torchvision_golden.py [--output tests/parity/golden] [PRESET ...]
# It needs torch, torchvision and numpy; the versions it ran with are written into each file.
#
# The fill is exact on both sides: the hash gives a 24-bit integer k per element, u = (k - 2^23) /
# 2^23 is a float32 in [-1, 1), and a value is float32(offset + scale * u) computed in double,
# where scale * u is exact (24 + 24 bits), so a fused multiply-add cannot change it.
import argparse
import copy
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as functional
import torchvision

MASK = (1 << 64) - 1
GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)
# A gradient whose fp64 norm is below this fraction of its fp32 norm is rounding noise in both.
VANISHING = 1e-3
PICKS = 6  # elements of each tensor written out, besides the largest one


def name_key(name):
    """FNV-1a, 64 bits, of the name's UTF-8 bytes."""
    key = 0xCBF29CE484222325
    for byte in name.encode():
        key = ((key ^ byte) * 0x100000001B3) & MASK
    return key


def mix(name, count):
    """splitmix64 of name_key(name) + (index + 1) * golden gamma, for index in [0, count)."""
    with np.errstate(over="ignore"):
        index = np.arange(count, dtype=np.uint64)
        z = np.uint64(name_key(name)) + (index + np.uint64(1)) * GOLDEN_GAMMA
        z = (z ^ (z >> np.uint64(30))) * MIX1
        z = (z ^ (z >> np.uint64(27))) * MIX2
        return z ^ (z >> np.uint64(31))


def uniform(name, count):
    """Per element a float32 value in [-1, 1), held in float64 (exactly)."""
    k = (mix(name, count) >> np.uint64(40)).astype(np.int64)
    return (k - (1 << 23)).astype(np.float64) / float(1 << 23)


def filled(name, shape, offset, scale):
    count = int(np.prod(shape)) if len(shape) else 1
    values = np.float64(offset) + np.float64(scale) * uniform(name, count)
    return values.astype(np.float32).reshape(shape)


def float32_value(x):
    """The float32 nearest x, as the Python float (double) that equals it exactly."""
    return float(np.float32(x))


# --- PyTorch twins of the presets torchvision lacks (src/nn/presets.cpp builds them in phalanx) ---


class FmnistCnn(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1, 1)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(32, 64, 3, 1, 1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        return self.fc2(self.relu3(self.fc1(torch.flatten(x, 1))))


class LeNet5(nn.Module):
    def __init__(self, size, in_channels, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 6, 5, 1, 2 if size == 28 else 0)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = self.pool1(functional.relu(self.conv1(x)))
        x = self.pool2(functional.relu(self.conv2(x)))
        x = functional.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc3(functional.relu(self.fc2(x)))


class CifarBasicBlock(nn.Module):
    """phalanx's resnet20 block: a 1x1 conv + BN projection named `shortcut` where the shape changes."""

    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, 0, bias=False), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x):
        y = self.bn2(self.conv2(functional.relu(self.bn1(self.conv1(x)))))
        return functional.relu(y + self.shortcut(x))


class ResNet20(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        in_channels = 16
        for stage, channels in enumerate((16, 32, 64)):
            blocks = []
            for block in range(3):
                blocks.append(CifarBasicBlock(in_channels, channels, 2 if stage > 0 and block == 0 else 1))
                in_channels = channels
            setattr(self, f"layer{stage + 1}", nn.Sequential(*blocks))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = functional.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(functional.adaptive_avg_pool2d(x, 1), 1))


# preset -> (sample shape [H, W, C], builder). Small inputs keep the C++ side quick on CI's two
# cores; the ImageNet models get 64x64 so their last stage still has 2x2 positions per sample
# for batch norm's statistics. Two take a rectangular image (as torchvision's models allow: their
# global pool is adaptive), one wide and one tall.
CLASSES = 10
BATCH = 4
PRESETS = {
    "fmnist_cnn": ([28, 28, 1], lambda: FmnistCnn(CLASSES)),
    "lenet5": ([32, 32, 3], lambda: LeNet5(32, 3, CLASSES)),
    "resnet20": ([32, 32, 3], lambda: ResNet20(CLASSES)),
    "resnet18": ([64, 64, 3], lambda: torchvision.models.resnet18(num_classes=CLASSES)),
    "resnet50": ([64, 64, 3], lambda: torchvision.models.resnet50(num_classes=CLASSES)),
    "resnext50_32x4d": ([64, 64, 3], lambda: torchvision.models.resnext50_32x4d(num_classes=CLASSES)),
    "mobilenet_v2": ([64, 64, 3], lambda: torchvision.models.mobilenet_v2(num_classes=CLASSES)),
    "mobilenet_v3_small": ([64, 96, 3], lambda: torchvision.models.mobilenet_v3_small(num_classes=CLASSES)),
    "efficientnet_b0": ([96, 64, 3], lambda: torchvision.models.efficientnet_b0(num_classes=CLASSES)),
}


def residual_branch_ends(model):
    """The batch norms that end a residual branch (torchvision's zero_init_residual targets)."""
    ends = set()
    for module in model.modules():
        if isinstance(module, (torchvision.models.resnet.BasicBlock, CifarBasicBlock)):
            ends.add(id(module.bn2))
        if isinstance(module, torchvision.models.resnet.Bottleneck):
            ends.add(id(module.bn3))
        # MobileNetV2/V3's InvertedResidual and EfficientNet's MBConv: the last batch norm of the
        # block's main path, where the block adds its input back.
        if getattr(module, "use_res_connect", False):
            norms = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
            ends.add(id(norms[-1]))
    return ends


def fill_rule(module, parameter_name, branch_ends):
    """(offset, scale) of a tensor's fill, by what it is: weights around 0 with the fan-in's scale
    (Kaiming's uniform bound sqrt(6 / fan_in), so activations keep their size through the network
    without batch norm), biases within 1 / sqrt(fan_in), batch-norm scales around 1, shifts and
    running means near 0, running variances around 1.

    The batch norm that ends a residual branch gets scales in [-0.25, 0.25], as torchvision's
    zero_init_residual and the usual ResNet recipes start them near 0 (but not at 0, so the branch
    still counts): with scales around 1, resnet50's 16 blocks at batch 4 blow the gradients up
    (the stem's weight gradient reaches a norm near 900) and PyTorch's own fp32 gradients then
    differ from its fp64 ones by 7%, which would leave the comparison nothing to say."""
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        if parameter_name == "weight" and id(module) in branch_ends:
            return (0.0, 0.25)
        return {
            "weight": (1.0, 0.25),
            "bias": (0.0, 0.1),
            "running_mean": (0.0, 0.1),
            "running_var": (1.0, 0.25),
        }[parameter_name]
    if isinstance(module, (nn.Conv2d, nn.Linear)):
        fan_in = module.weight[0].numel()
        if parameter_name == "weight":
            return (0.0, math.sqrt(6.0 / fan_in))
        return (0.0, 1.0 / math.sqrt(fan_in))
    raise SystemExit(f"no fill rule for {type(module).__name__} parameter {parameter_name}")


def rounded(value):
    """Ten significant digits: far finer than any tolerance, and the files stay small."""
    return float(f"{value:.10g}")


def summary(name, values):
    """Sum, absolute sum, L2 norm (in double) and a few elements at hash-chosen positions plus the
    largest one: enough to catch a wrong tensor without storing it."""
    flat = values.reshape(-1).astype(np.float64)
    count = flat.size
    positions = [int(p) for p in mix("pick/" + name, PICKS) % np.uint64(count)]
    positions.append(int(np.argmax(np.abs(flat))))
    return {
        "sum": rounded(flat.sum()),
        "abs_sum": rounded(np.abs(flat).sum()),
        "norm": rounded(np.sqrt((flat * flat).sum())),
        "elements": [[p, rounded(flat[p])] for p in positions],
    }


class Discrepancy:
    """The C++ test's measure (test_preset_parity.cpp), here for PyTorch's own fp32 result against
    the fp64 golden values: |ours - golden| / (|golden| + scale)."""

    def __init__(self):
        self.worst, self.where = 0.0, ""

    def add(self, ours, golden, scale, what):
        error = abs(ours - golden) / (abs(golden) + scale)
        if error > self.worst:
            self.worst, self.where = error, what

    def add_summary(self, what, values, golden):
        flat = values.reshape(-1).astype(np.float64)
        typical = golden["norm"] / math.sqrt(flat.size)
        self.add(float(flat.sum()), golden["sum"], golden["abs_sum"], what + " sum")
        self.add(float(np.abs(flat).sum()), golden["abs_sum"], 0.0, what + " absolute sum")
        self.add(float(np.sqrt((flat * flat).sum())), golden["norm"], 0.0, what + " norm")
        for position, value in golden["elements"]:
            self.add(float(flat[position]), value, typical, f"{what}[{position}]")


def training_step(model, images, labels, dtype):
    """Forward (training mode) and backward of the mean cross-entropy in `dtype`; the model's
    parameters and buffers are left as the step made them (gradients, running statistics)."""
    model.to(dtype).train()
    logits = model(images.to(dtype))
    loss = functional.cross_entropy(logits, torch.tensor(labels))
    loss.backward()
    return logits.detach().to(torch.float64).numpy().reshape(-1), float(loss.item())


def make_golden(preset):
    sample_shape, build = PRESETS[preset]
    height, width, channels = sample_shape
    torch.manual_seed(0)  # unused by the fill; keeps construction-time randomness fixed anyway
    model = build()
    modules = dict(model.named_modules())
    branch_ends = residual_branch_ends(model)
    parameters, buffers = [], []
    with torch.no_grad():
        for kind, named in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
            for full_name, tensor in named:
                module_name, _, parameter_name = full_name.rpartition(".")
                if parameter_name == "num_batches_tracked":
                    continue  # phalanx keeps no batch counter (momentum is fixed)
                name = full_name.replace(".", "/")
                offset, scale = fill_rule(modules[module_name], parameter_name, branch_ends)
                scale = float32_value(scale)
                shape = list(tensor.shape)
                tensor.copy_(torch.from_numpy(filled(name, shape, offset, scale)))
                entry = {"name": name, "shape": shape, "fill": {"offset": offset, "scale": scale}}
                (parameters if kind == "parameter" else buffers).append((entry, full_name))
    # Dropout, where a preset has it, would make the step random: its probability is set to 0 on
    # both sides (the C++ test does the same), which keeps training mode, so batch norm uses the
    # batch's statistics and updates its running ones, as a phalanx training step does.
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
        if isinstance(module, torchvision.ops.StochasticDepth):
            module.p = 0.0

    images = torch.from_numpy(filled("input", [BATCH, channels, height, width], 0.0, 1.0))
    labels = [(3 * sample + 1) % CLASSES for sample in range(BATCH)]
    # The golden values are fp64 (the exact result, up to fp64 rounding), from the same fp32
    # values; PyTorch's own fp32 step is measured against them as the test measures phalanx's.
    model_fp32 = copy.deepcopy(model)
    logits, loss = training_step(model, images, labels, torch.float64)
    logits_fp32, loss_fp32 = training_step(model_fp32, images, labels, torch.float32)

    golden = {
        "format": "phalanx-parity-golden",
        "version": 1,
        "preset": preset,
        "made_with": {"torch": torch.__version__, "torchvision": torchvision.__version__,
                      "numpy": np.__version__},
        "sample_shape": sample_shape,
        "classes": CLASSES,
        "batch": BATCH,
        "input_fill": {"name": "input", "layout": "NCHW", "offset": 0.0, "scale": 1.0},
        "labels": labels,
        "loss": rounded(loss),
        "logits": [rounded(v) for v in logits],
        "parameters": [],
        "buffers": [],
    }
    torch_fp32 = Discrepancy()
    torch_fp32.add(loss_fp32, loss, 0.0, "loss")
    logit_scale = float(np.sqrt(np.mean(logits * logits)))
    for index, (ours, exact) in enumerate(zip(logits_fp32, logits)):
        torch_fp32.add(float(ours), float(exact), logit_scale, f"logits[{index}]")
    named_parameters, named_parameters_fp32 = dict(model.named_parameters()), dict(model_fp32.named_parameters())
    for entry, full_name in parameters:
        gradient, gradient_fp32 = named_parameters[full_name].grad.numpy(), named_parameters_fp32[full_name].grad.numpy()
        entry["gradient"] = summary(entry["name"], gradient)
        fp32_norm = float(np.linalg.norm(gradient_fp32.astype(np.float64)))
        if entry["gradient"]["norm"] < VANISHING * fp32_norm:
            # Zero in exact arithmetic (a batch norm's shift whose output reaches the loss only
            # through 1x1 convolutions into training-mode batch norms, which cancel every
            # per-channel sum): fp64 leaves ~1e-17, fp32 ~1e-9, both rounding noise. The test
            # asks phalanx's for noise of the same size, not for torch's noise digits.
            entry["gradient"]["vanishes"] = {"torch_float32_norm": rounded(fp32_norm)}
        else:
            torch_fp32.add_summary("gradient of " + entry["name"], gradient_fp32, entry["gradient"])
        golden["parameters"].append(entry)
    named_buffers, named_buffers_fp32 = dict(model.named_buffers()), dict(model_fp32.named_buffers())
    for entry, full_name in buffers:
        entry["after_forward"] = summary(entry["name"], named_buffers[full_name].numpy())
        torch_fp32.add_summary(entry["name"] + " after the forward", named_buffers_fp32[full_name].numpy(),
                               entry["after_forward"])
        golden["buffers"].append(entry)
    golden["torch_float32_discrepancy"] = {"largest": torch_fp32.worst, "at": torch_fp32.where}
    return golden


def main():
    parser = argparse.ArgumentParser(description="Writes the golden files of the preset parity test.")
    parser.add_argument("--output", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))
    parser.add_argument("presets", nargs="*", default=list(PRESETS))
    arguments = parser.parse_args()
    # One thread and deterministic algorithms: the golden values should not depend on the machine's
    # core count (a different reduction order moves the last bits).
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    unknown = [preset for preset in arguments.presets if preset not in PRESETS]
    if unknown:
        print(f"make_torchvision_golden.py: unknown preset '{unknown[0]}' (known: {', '.join(PRESETS)})",
              file=sys.stderr)
        sys.exit(2)
    os.makedirs(arguments.output, exist_ok=True)
    for preset in arguments.presets:
        golden = make_golden(preset)
        path = os.path.join(arguments.output, preset + ".json")
        with open(path + ".tmp", "w") as file:
            json.dump(golden, file, separators=(",", ":"))
            file.write("\n")
        os.replace(path + ".tmp", path)
        worst = golden["torch_float32_discrepancy"]
        print(f"{preset}: loss {golden['loss']:.6f}, {len(golden['parameters'])} parameters, "
              f"{os.path.getsize(path)} bytes; torch fp32 against these fp64 values: "
              f"{worst['largest']:.3g} at {worst['at']}")


if __name__ == "__main__":
    main()
