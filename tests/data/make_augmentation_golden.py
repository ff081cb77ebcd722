#!/usr/bin/env python3
# Writes the golden file of the augmentation ops test (test_augmentation_golden.cpp): small uint8
# images, the parameters of one op, and what torchvision's functional op makes of them, so the C++
# ops are checked against torchvision without needing it when the tests run.
#
# CI has no PyTorch: the golden file is committed and this script documents how it was made.
# Rerun it after an op changes on purpose:
#   python3 tests/data/make_augmentation_golden.py [--output tests/data/golden/augmentation.json]
# It needs torch and torchvision; the versions it ran with are written into the file.
#
# Images are HWC uint8 (phalanx's layout) in the file and transposed to torchvision's CHW here.
# Each case has a tolerance: the largest absolute difference allowed per byte (0: exact).
import argparse
import json
import os

import torch
import torchvision
import torchvision.transforms.functional as functional


def image(height, width, channels, salt):
    """Bytes from a fixed linear congruential sequence: the same on every run and platform."""
    state = (12345 + 7919 * salt) & 0xFFFFFFFF
    values = []
    for _ in range(height * width * channels):
        state = (1103515245 * state + 12345) & 0x7FFFFFFF
        values.append((state >> 16) & 0xFF)
    return torch.tensor(values, dtype=torch.uint8).reshape(height, width, channels)


def to_chw(hwc):
    return hwc.permute(2, 0, 1).contiguous()


def to_hwc(chw):
    return chw.permute(1, 2, 0).contiguous()


def case(op, source, params, expected, tolerance=0):
    height, width, channels = source.shape
    return {
        "op": op,
        "height": height,
        "width": width,
        "channels": channels,
        "params": params,
        "image": source.flatten().tolist(),
        "expected": expected.flatten().tolist(),
        "expected_height": expected.shape[0],
        "expected_width": expected.shape[1],
        "tolerance": tolerance,
    }


def erase_cases():
    """RandomErasing's op: F.erase(img, i, j, h, w, v=0), rectangles inside and touching edges."""
    cases = []
    shapes = [(8, 10, 3), (7, 5, 1), (12, 12, 2)]
    for salt, (height, width, channels) in enumerate(shapes):
        source = image(height, width, channels, salt)
        for top, left, rows, columns in [(0, 0, 1, 1), (2, 3, 4, 2), (height - 3, width - 4, 3, 4),
                                         (1, 0, height - 2, width - 1)]:
            erased = functional.erase(to_chw(source), top, left, rows, columns, torch.tensor(0, dtype=torch.uint8))
            cases.append(case("erase", source, {"top": top, "left": left, "height": rows, "width": columns},
                              to_hwc(erased)))
    return cases


def crop_flip_cases():
    """RandomCrop(padding) then RandomHorizontalFlip: F.pad with zeros, F.crop, F.hflip."""
    cases = []
    for salt, (height, width, channels) in enumerate([(9, 7, 3), (6, 6, 1)]):
        source = image(height, width, channels, 10 + salt)
        padding = 3
        for top, left, flip in [(0, 0, False), (6, 1, True), (3, 3, True), (2, 5, False)]:
            padded = functional.pad(to_chw(source), [padding], fill=0)
            cropped = functional.crop(padded, top, left, height, width)
            if flip:
                cropped = functional.hflip(cropped)
            cases.append(case("crop_flip", source, {"padding": padding, "top": top, "left": left, "flip": flip},
                              to_hwc(cropped)))
    return cases


BILINEAR = functional.InterpolationMode.BILINEAR


def resized_crop_cases():
    """RandomResizedCrop's op: F.resized_crop(img, top, left, h, w, size, BILINEAR, antialias=False),
    boxes shrunk, enlarged, stretched one way, and the whole image."""
    cases = []
    for salt, (height, width, channels) in enumerate([(20, 17, 3), (9, 12, 1)]):
        source = image(height, width, channels, 20 + salt)
        for top, left, rows, columns, output in [(0, 0, height, width, (8, 8)), (2, 3, 7, 5, (11, 13)),
                                                 (height - 6, width - 4, 6, 4, (6, 9)),
                                                 (1, 1, height - 2, width - 3, (5, 7)), (3, 2, 4, 4, (4, 4))]:
            resized = functional.resized_crop(to_chw(source), top, left, rows, columns, list(output),
                                              interpolation=BILINEAR, antialias=False)
            cases.append(case("resized_crop", source,
                              {"top": top, "left": left, "height": rows, "width": columns,
                               "output_height": output[0], "output_width": output[1]},
                              to_hwc(resized), tolerance=1))
    return cases


def resize_center_crop_cases():
    """Evaluation's Resize(resize) (the shorter side) + CenterCrop(output), bilinear, antialias=False."""
    cases = []
    for salt, (height, width, channels, resize, output) in enumerate(
            [(20, 17, 3, 16, (14, 14)), (12, 18, 1, 14, (12, 13)), (15, 15, 2, 18, (15, 16)),
             (24, 19, 3, 9, (8, 8))]):
        source = image(height, width, channels, 30 + salt)
        resized = functional.resize(to_chw(source), resize, interpolation=BILINEAR, antialias=False)
        cropped = functional.center_crop(resized, list(output))
        cases.append(case("resize_center_crop", source,
                          {"resize": resize, "output_height": output[0], "output_width": output[1]},
                          to_hwc(cropped), tolerance=1))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "golden", "augmentation.json"))
    arguments = parser.parse_args()
    golden = {
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cases": erase_cases() + crop_flip_cases() + resized_crop_cases() + resize_center_crop_cases(),
    }
    with open(arguments.output, "w") as out:
        json.dump(golden, out, separators=(",", ":"))
        out.write("\n")


if __name__ == "__main__":
    main()
