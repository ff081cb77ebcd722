#!/usr/bin/env python3
# Writes the golden file of the auto-augment ops test (test_auto_augment_golden.cpp): torchvision's
# magnitude tables of TrivialAugmentWide and RandAugment, and small uint8 images with what
# torchvision's _apply_op (the function both transforms call, nearest interpolation, fill None)
# makes of them for one op and one signed magnitude, so the C++ ops are checked against
# torchvision without needing it when the tests run.
#
# CI has no PyTorch: the golden file is committed and this script documents how it was made.
# Rerun it after an op changes on purpose:
#   python3 tests/data/make_autoaugment_golden.py [--output tests/data/golden/autoaugment.json]
# It needs torch and torchvision; the versions it ran with are written into the file.
#
# Images are HWC uint8 (phalanx's layout), hex-encoded, stored once and named by index in the cases.
import argparse
import json
import os

import torch
import torchvision
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import RandAugment, TrivialAugmentWide, _apply_op

OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast",
       "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"]


def noise(height, width, channels, salt, low=0, span=256):
    """Bytes in [low, low + span) from a fixed linear congruential sequence, the same everywhere."""
    state = (12345 + 7919 * salt) & 0xFFFFFFFF
    values = []
    for _ in range(height * width * channels):
        state = (1103515245 * state + 12345) & 0x7FFFFFFF
        values.append(low + ((state >> 16) & 0xFF) % span)
    return torch.tensor(values, dtype=torch.uint8).reshape(height, width, channels)


def garment(height, width, channels, salt):
    """A Fashion-MNIST-like image: a bright textured ellipse on a black background."""
    texture = noise(height, width, channels, salt, 0, 48).to(torch.int32)
    image = torch.zeros(height, width, channels, dtype=torch.int32)
    for y in range(height):
        for x in range(width):
            dy, dx = (y - height / 2 + 0.5) / (0.42 * height), (x - width / 2 + 0.5) / (0.3 * width)
            if dy * dy + dx * dx <= 1.0:
                for c in range(channels):
                    image[y, x, c] = 120 + 40 * c + (y * 3) % 50 + texture[y, x, c] - 24
    return image.clamp(0, 255).to(torch.uint8)


def images():
    return [
        garment(28, 28, 1, 1),           # Fashion-MNIST's shape
        noise(9, 11, 3, 2, 30, 150),     # RGB, a narrow range (AutoContrast stretches it)
        garment(12, 10, 3, 3),           # RGB, non-square
        noise(7, 8, 1, 4, 60, 40),       # grayscale, few values (Equalize's coarse histogram)
        noise(2, 5, 3, 5),               # too small for Sharpness's smoothing
    ]


def to_hex(hwc):
    return bytes(hwc.flatten().tolist()).hex()


def magnitude_tables():
    """Each policy's _augmentation_space for 31 bins on 28 x 28 and 10 bins on 32 x 24, as floats."""
    tables = []
    for bins, (height, width) in ((31, (28, 28)), (10, (32, 24))):
        spaces = {"trivial_augment_wide": TrivialAugmentWide()._augmentation_space(bins),
                  "rand_augment": RandAugment()._augmentation_space(bins, (height, width))}
        for policy, space in spaces.items():
            ops = {}
            for op in OPS:
                magnitudes, signed = space[op]
                values = [float(v) for v in magnitudes.flatten().tolist()] if magnitudes.ndim > 0 else []
                ops[op] = {"signed": signed, "magnitudes": values}
            tables.append({"policy": policy, "bins": bins, "height": height, "width": width, "ops": ops})
    return tables


AFFINE = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}


def op_cases(sources):
    """Each op at magnitudes from both policies' tables (31 bins): the affine ops at five signed
    magnitudes, the others at two or three, parameterless ones once."""
    wide = TrivialAugmentWide()._augmentation_space(31)
    cases = []
    for index, source in enumerate(sources):
        height, width, channels = source.shape
        rand = RandAugment()._augmentation_space(31, (height, width))
        for op in OPS:
            if wide[op][0].ndim == 0:
                magnitudes = [0.0]
            elif op in AFFINE:
                magnitudes = [float(wide[op][0][30]), -float(wide[op][0][30]), float(wide[op][0][17]),
                              float(rand[op][0][9]), -float(rand[op][0][9])]
            elif wide[op][1]:
                magnitudes = [-float(wide[op][0][30]), float(wide[op][0][17]), float(rand[op][0][9])]
            else:
                magnitudes = [float(wide[op][0][30]), float(rand[op][0][9])]
            for magnitude in magnitudes:
                chw = source.permute(2, 0, 1).contiguous()
                result = _apply_op(chw, op, magnitude, interpolation=InterpolationMode.NEAREST, fill=None)
                cases.append({"image": index, "op": op, "magnitude": magnitude,
                              "expected": to_hex(result.permute(1, 2, 0))})
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "golden", "autoaugment.json"))
    arguments = parser.parse_args()
    sources = images()
    golden = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "images": [{"height": s.shape[0], "width": s.shape[1], "channels": s.shape[2], "bytes": to_hex(s)}
                   for s in sources],
        "tables": magnitude_tables(),
        "cases": op_cases(sources),
    }
    with open(arguments.output, "w") as out:
        json.dump(golden, out, separators=(",", ":"))
        out.write("\n")


if __name__ == "__main__":
    main()
