#!/usr/bin/env python3
"""Writes the parameter and buffer names and shapes of torchvision's models, one per line:

    <model> parameter|buffer <state_dict name with '/' for '.'> <dims joined by 'x'>

for the presets phalanx builds to match them. tests/nn/test_mobile_presets.cpp reads the file this
writes (tests/nn/data/torchvision_parameters.txt) and compares every preset with it, so the check
runs where torchvision is not installed. num_batches_tracked is left out: phalanx keeps no such
buffer. Rerun with a newer torchvision to check that nothing changed:

    python3 tests/nn/torchvision_parameters.py > tests/nn/data/torchvision_parameters.txt
"""
import sys

import torchvision

MODELS = ["mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "resnext50_32x4d", "resnet50", "resnet18"]


def main() -> None:
    out = sys.stdout
    out.write(f"# torchvision {torchvision.__version__}, 1000 classes\n")
    for name in MODELS:
        model = getattr(torchvision.models, name)(weights=None)
        for kind, entries in (("parameter", model.named_parameters()), ("buffer", model.named_buffers())):
            for key, tensor in entries:
                if key.endswith("num_batches_tracked"):
                    continue
                dims = "x".join(str(size) for size in tensor.shape)
                out.write(f"{name} {kind} {key.replace('.', '/')} {dims}\n")


if __name__ == "__main__":
    main()
