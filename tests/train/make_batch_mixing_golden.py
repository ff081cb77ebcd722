#!/usr/bin/env python3
# Writes the golden file of the mixup/CutMix tests (tests/train/test_batch_mixing_golden.cpp): small
# normalised batches, one lam (and CutMix's box centre), and what timm's Mixup makes of them in
# its 'batch' mode, plus timm's SoftTargetCrossEntropy of mixup_target on a few logits, so the C++
# mixing and loss are checked against timm's arithmetic without needing PyTorch when tests run.
#
# CI has no PyTorch: the golden file is committed and this script documents how it was made.
# Rerun it after the mixing or the loss changes on purpose:
#   python3 tests/train/make_batch_mixing_golden.py [--output tests/train/golden/batch_mixing.json]
# It needs torch; the version it ran with is written into the file. The timm functions below are
# copied from timm/data/mixup.py and timm/loss/cross_entropy.py (Apache-2.0), with the random box
# centre passed in instead of drawn, so timm itself need not be installed.
#
# Batches are NHWC float32 (phalanx's layout) in the file and transposed to torch's NCHW here.
import argparse
import json
import os

import numpy as np
import torch


# ---- timm/data/mixup.py -------------------------------------------------------------------------
def one_hot(x, num_classes, on_value=1.0, off_value=0.0):
    x = x.long().view(-1, 1)
    return torch.full((x.size()[0], num_classes), off_value, device=x.device, dtype=torch.float64).scatter_(
        1, x, on_value)


def mixup_target(target, num_classes, lam=1.0, smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1.0 - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1.0 - lam)


def rand_bbox(img_shape, lam, cy, cx, margin=0.0):
    """timm's rand_bbox with the centre (np.random.randint there) given."""
    ratio = np.sqrt(1 - lam)
    img_h, img_w = img_shape[-2:]
    cut_h, cut_w = int(img_h * ratio), int(img_w * ratio)
    yl = np.clip(cy - cut_h // 2, 0, img_h)
    yh = np.clip(cy + cut_h // 2, 0, img_h)
    xl = np.clip(cx - cut_w // 2, 0, img_w)
    xh = np.clip(cx + cut_w // 2, 0, img_w)
    return yl, yh, xl, xh


def cutmix_bbox_and_lam(img_shape, lam, cy, cx, correct_lam=True):
    yl, yu, xl, xu = rand_bbox(img_shape, lam, cy, cx)
    if correct_lam:
        bbox_area = (yu - yl) * (xu - xl)
        lam = 1.0 - bbox_area / float(img_shape[-2] * img_shape[-1])
    return (yl, yu, xl, xu), lam


def mix_batch(x, lam, use_cutmix, cy=0, cx=0):
    """Mixup._mix_batch (x is NCHW, changed in place); returns the corrected lam and the box."""
    box = (0, 0, 0, 0)
    if use_cutmix:
        box, lam = cutmix_bbox_and_lam(x.shape, lam, cy, cx)
        yl, yh, xl, xh = box
        x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
    else:
        x_flipped = x.flip(0).mul_(1.0 - lam)
        x.mul_(lam).add_(x_flipped)
    return lam, [int(value) for value in box]


# ---- timm/loss/cross_entropy.py ------------------------------------------------------------------
def soft_target_cross_entropy(x, target):
    """SoftTargetCrossEntropy per sample (timm takes the mean; the test compares the sum)."""
    return torch.sum(-target * torch.nn.functional.log_softmax(x, dim=-1), dim=-1)


def values(count, salt, scale):
    """Floats from a fixed linear congruential sequence: the same on every run and platform."""
    state = (2654435761 * (salt + 1)) & 0x7FFFFFFF
    result = []
    for _ in range(count):
        state = (1103515245 * state + 12345) & 0x7FFFFFFF
        result.append(((state >> 8) / float(1 << 23) - 0.5) * scale)
    return result


def mixing_cases():
    cases = []
    specs = [  # (batch, height, width, channels, kind, lam, centre y, centre x)
        (5, 4, 3, 2, "mixup", 0.3137, 0, 0),
        (4, 5, 6, 3, "mixup", 0.875, 0, 0),
        (4, 6, 7, 3, "cutmix", 0.6, 1, 5),     # the box clipped at the top and the right
        (3, 8, 8, 1, "cutmix", 0.3, 4, 4),     # odd batch: the middle sample is its own partner
        (6, 5, 9, 2, "cutmix", 0.8, 2, 0),     # clipped at the left
        (2, 5, 9, 2, "cutmix", 0.95, 2, 0),    # int(5 * sqrt(0.05)) = 1 row, halved to none: lam 1
    ]
    for salt, (batch, height, width, channels, kind, lam, cy, cx) in enumerate(specs):
        nhwc = torch.tensor(values(batch * height * width * channels, salt, 4.0), dtype=torch.float32).reshape(
            batch, height, width, channels)
        nchw = nhwc.permute(0, 3, 1, 2).clone()  # a copy even where the permutation is a view (C = 1)
        own_weight, box = mix_batch(nchw, lam, kind == "cutmix", cy, cx)
        cases.append({
            "kind": kind, "batch": batch, "height": height, "width": width, "channels": channels,
            "lam": lam, "centre_y": cy, "centre_x": cx, "box": box, "own_weight": own_weight,
            "input": nhwc.flatten().tolist(),
            "expected": nchw.permute(0, 2, 3, 1).contiguous().flatten().tolist(),
        })
    return cases


def loss_cases():
    cases = []
    specs = [(6, 5, 0.3137, 0.0), (5, 10, 0.7, 0.1), (4, 3, 0.5, 0.2), (3, 7, 1.0, 0.1)]
    for salt, (batch, classes, lam, smoothing) in enumerate(specs):
        logits = torch.tensor(values(batch * classes, 100 + salt, 8.0), dtype=torch.float32).reshape(batch, classes)
        labels = torch.tensor([(7 * row + salt) % classes for row in range(batch)], dtype=torch.int64)
        target = mixup_target(labels, classes, lam, smoothing)
        wide = logits.double().requires_grad_(True)
        loss = soft_target_cross_entropy(wide, target)
        loss.sum().backward()
        cases.append({
            "batch": batch, "classes": classes, "lam": lam, "smoothing": smoothing,
            "logits": logits.flatten().tolist(), "labels": labels.tolist(),
            "loss_sum": float(loss.sum().detach()), "grad_logits": wide.grad.flatten().tolist(),
        })
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "golden", "batch_mixing.json"))
    arguments = parser.parse_args()
    golden = {"torch": torch.__version__, "mixing": mixing_cases(), "loss": loss_cases()}
    with open(arguments.output, "w") as out:
        json.dump(golden, out, separators=(",", ":"))


if __name__ == "__main__":
    main()
