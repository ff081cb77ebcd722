#!/usr/bin/python3
"""FLOPs of one training image through phalanx's `fmnist_cnn` and `resnet20` presets (the shapes of
src/nn/presets.cpp, as bench/torch_cpu_train.py twins them): the convolutions and linear layers,
which are where the arithmetic is (batch norm, ReLU, pooling and the optimizer add well under 1%).
A multiply-add counts as 2 FLOPs. Forward: 2 x K x K x C_in x C_out x H_out x W_out per convolution,
2 x in x out per linear layer. Backward: the same again for the weight gradient and again for the
input gradient, except the first layer, whose input gradient nobody needs (phalanx skips it).

Given measured images/s (`--rate MODEL=IMAGES_PER_SEC`) and the cores' measured peak
(`--peak-gflops` from build/bench/phalanx_bench_peak_flops), it prints the achieved GFLOP/s and
the share of peak:
  python3 bench/model_flops.py --rate fmnist_cnn=7385 --rate resnet20=1010 --peak-gflops 250
"""

import argparse


def conv(channels_in, channels_out, kernel, height_out, width_out):
    return 2 * kernel * kernel * channels_in * channels_out * height_out * width_out


def fmnist_cnn():
    """(name, forward FLOPs) per layer, 28x28x1 input."""
    return [("conv1", conv(1, 32, 3, 28, 28)), ("conv2", conv(32, 64, 3, 14, 14)),
            ("fc1", 2 * 3136 * 128), ("fc2", 2 * 128 * 10)]


def resnet20(channels=3, size=32):
    """(name, forward FLOPs) per layer, size x size x channels input (CIFAR: 32x32x3)."""
    layers = [("conv1", conv(channels, 16, 3, size, size))]
    channels_in, side = 16, size
    for stage, channels_out in enumerate((16, 32, 64)):
        for block in range(3):
            stride = 2 if stage > 0 and block == 0 else 1
            side_out = side // stride
            name = f"layer{stage + 1}.{block}"
            layers.append((name + ".conv1", conv(channels_in, channels_out, 3, side_out, side_out)))
            layers.append((name + ".conv2", conv(channels_out, channels_out, 3, side_out, side_out)))
            if stride != 1 or channels_in != channels_out:
                layers.append((name + ".shortcut", conv(channels_in, channels_out, 1, side_out, side_out)))
            channels_in, side = channels_out, side_out
    layers.append(("fc", 2 * 64 * 10))
    return layers


MODELS = {"fmnist_cnn": fmnist_cnn, "resnet20": resnet20}


def training_flops(layers):
    """Forward, backward and their sum per image."""
    forward = sum(flops for _, flops in layers)
    # Weight gradients for every layer, input gradients for all but the first.
    backward = forward + (forward - layers[0][1])
    return forward, backward, forward + backward


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", action="append", default=[], metavar="MODEL=IMAGES_PER_SEC")
    parser.add_argument("--peak-gflops", type=float, help="the cores' measured peak, GFLOP/s")
    args = parser.parse_args()
    rates = {}
    for item in args.rate:
        model, _, value = item.partition("=")
        if model not in MODELS or not value:
            parser.error(f"--rate {item}: expected one of {', '.join(MODELS)}=IMAGES_PER_SEC")
        rates.setdefault(model, []).append(float(value))
    print(f"{'model':<12} {'forward MFLOP':>14} {'backward MFLOP':>15} {'step MFLOP/img':>15}  images/s -> GFLOP/s (share of peak)")
    for name, build in MODELS.items():
        forward, backward, total = training_flops(build())
        line = f"{name:<12} {forward / 1e6:>14.2f} {backward / 1e6:>15.2f} {total / 1e6:>15.2f}"
        for rate in rates.get(name, []):
            achieved = rate * total / 1e9
            share = f" ({100 * achieved / args.peak_gflops:.1f}%)" if args.peak_gflops else ""
            line += f"  {rate:,.0f} -> {achieved:.1f}{share}"
        print(line)


if __name__ == "__main__":
    main()
