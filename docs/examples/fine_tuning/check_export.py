"""Closes the loop of the fine-tuning example: the weights `phalanx checkpoint export` wrote go back
into torchvision's model with a strict load_state_dict, and PyTorch evaluates them on the test
split of the phalanx dataset, normalised with the dataset's own statistics as phalanx does.

Usage: python check_export.py EXPORTED.safetensors DATASET.h5 [--model mobilenet_v2] [--threads 2]

Prints PyTorch's test accuracy, to set beside `phalanx eval`'s on the same checkpoint. Needs torch,
torchvision, safetensors and h5py.
"""

import argparse
import sys

import h5py
import safetensors.torch
import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("weights")
    parser.add_argument("dataset")
    parser.add_argument("--model", default="mobilenet_v2", choices=["mobilenet_v2", "resnet18"])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with h5py.File(args.dataset, "r") as file:
        classes = len(file.attrs["classes"])
        mean = torch.tensor(file["train/images"].attrs["mean"]).view(1, -1, 1, 1)
        std = torch.tensor(file["train/images"].attrs["std"]).view(1, -1, 1, 1)
        images, labels = file["test/images"][...], file["test/labels"][...]

    state = safetensors.torch.load_file(args.weights)
    model = getattr(torchvision.models, args.model)(num_classes=classes)
    # phalanx writes no num_batches_tracked (a counter only BatchNorm's momentum=None uses); take
    # torch's own for those, then every other tensor must match by name and shape: strict=True.
    missing = [name for name in model.state_dict() if name not in state]
    if any(not name.endswith("num_batches_tracked") for name in missing):
        sys.exit(f"{args.weights}: missing {[n for n in missing if not n.endswith('num_batches_tracked')]}")
    state.update({name: model.state_dict()[name] for name in missing})
    model.load_state_dict(state, strict=True)
    print(f"{args.weights}: {len(state) - len(missing)} tensors loaded into torchvision's "
          f"{args.model}(num_classes={classes}) with strict=True "
          f"({len(missing)} num_batches_tracked counters from torch)")

    model.eval()
    correct = 0
    with torch.no_grad():
        for first in range(0, len(labels), 500):
            x = torch.from_numpy(images[first:first + 500]).permute(0, 3, 1, 2).float() / 255
            prediction = model((x - mean) / std).argmax(1)
            correct += (prediction == torch.from_numpy(labels[first:first + 500]).long()).sum().item()
    print(f"PyTorch test accuracy {correct / len(labels):.4f} on {len(labels)} images")


if __name__ == "__main__":
    main()
