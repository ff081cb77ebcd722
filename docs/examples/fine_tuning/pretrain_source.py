"""The PyTorch side of the fine-tuning example: torchvision's model trained on the source task
(the Fashion-MNIST classes make_data.py put in x_source), its weights saved as safetensors for
`phalanx checkpoint import` and `model.init_from`.

Usage: python pretrain_source.py ARRAYS.h5 OUT.safetensors [--model mobilenet_v2] [--epochs 1]
       [--batch 128] [--learning-rate 0.002] [--threads 2] [--seed 0]

The images are normalised as phalanx normalises a dataset, (x / 255 - mean) / std per channel
with the statistics of the training images. Prints the accuracy on the test images of the source
classes. Needs torch, torchvision, safetensors, h5py and numpy.
"""

import argparse
import math
import time

import h5py
import numpy as np
import safetensors.torch
import torch
import torchvision


def normalised(images, mean, std):
    # uint8 NHWC -> float NCHW.
    tensor = torch.from_numpy(images).permute(0, 3, 1, 2).float().div_(255)
    return ((tensor - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)).contiguous()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arrays")
    parser.add_argument("output")
    parser.add_argument("--model", default="mobilenet_v2", choices=["mobilenet_v2", "resnet18"])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=0.002)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    with h5py.File(args.arrays, "r") as file:
        train_images, train_labels = file["x_source"][...], file["y_source"][...]
        test_images, test_labels = file["x_test"][...], file["y_test"][...]
    classes = int(train_labels.max()) + 1
    keep = test_labels < classes  # the test images of the source classes
    test_images, test_labels = test_images[keep], test_labels[keep]

    pixels = train_images.reshape(-1, train_images.shape[-1]).astype(np.float64) / 255
    mean = torch.tensor(pixels.mean(axis=0), dtype=torch.float32)
    std = torch.tensor(pixels.std(axis=0), dtype=torch.float32)
    train_x, train_y = normalised(train_images, mean, std), torch.from_numpy(train_labels)
    test_x, test_y = normalised(test_images, mean, std), torch.from_numpy(test_labels)

    # Contiguous (NCHW) weights: safetensors refuses to save a channels_last model's tensors.
    model = getattr(torchvision.models, args.model)(num_classes=classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=1e-4)
    steps = args.epochs * math.ceil(len(train_y) / args.batch)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    loss_function = torch.nn.CrossEntropyLoss()

    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(train_y))
        total, count = 0.0, 0
        for first in range(0, len(order), args.batch):
            batch = order[first:first + args.batch]
            x, y = train_x[batch], train_y[batch]
            if torch.rand(()) < 0.5:  # a horizontal flip of the whole batch half the time
                x = x.flip(3)
            loss = loss_function(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            total, count = total + loss.item() * len(batch), count + len(batch)
        print(f"epoch {epoch + 1}/{args.epochs}: train loss {total / count:.4f} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)

    model.eval()
    with torch.no_grad():
        correct = sum((model(test_x[first:first + 500]).argmax(1) == test_y[first:first + 500]).sum().item()
                      for first in range(0, len(test_y), 500))
    print(f"source task ({classes} classes, {len(train_y)} training images): test accuracy "
          f"{correct / len(test_y):.4f} on {len(test_y)} test images")

    # The one line that shares a model's weights as safetensors; phalanx ignores
    # num_batches_tracked, so the state_dict goes as it is.
    safetensors.torch.save_file(model.state_dict(), args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
