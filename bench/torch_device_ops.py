#!/usr/bin/env python3
"""PyTorch peer of bench/device_ops.cpp: the same ops at the same ResNet-50 shapes, on the tensors
PyTorch eager's bf16 autocast hands its kernels, in channels_last memory (bf16 activations, bf16
weights for convolutions and GEMMs, batch norm on bf16 input with fp32 gamma, beta and
statistics), so that each row can be set beside phalanx's "bf16 activations" column. The weights
are made bf16 once, up front: the per-call weight cast autocast adds is not timed here, where
phalanx's convolution and classifier rows include their weight transposes and casts.

  python3 bench/torch_device_ops.py [--device cuda|cpu] [--batch N] [--calls N] [--rounds N]

Each op is timed over --calls calls between two CUDA events (the wall clock on the CPU) after two
warm-up calls, --rounds times; the median per call is printed in milliseconds. Backward rows time
the backward kernels alone (torch.ops.aten.*_backward and autograd.grad on a kept graph), as
phalanx's backward rows do. On the CPU (a dry run of the script) everything runs in fp32.
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def timed(call, calls, rounds, device):
    for _ in range(2):
        call()
    results = []
    for _ in range(rounds):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                call()
            end.record()
            end.synchronize()
            results.append(start.elapsed_time(end) / calls)
        else:
            began = time.perf_counter()
            for _ in range(calls):
                call()
            results.append(1000.0 * (time.perf_counter() - began) / calls)
    return statistics.median(results)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    arguments = parser.parse_args()
    device = arguments.device
    on_gpu = device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise SystemExit("no CUDA device is visible to PyTorch; --device cpu runs the script on the CPU")
    batch = arguments.batch or (256 if on_gpu else 2)
    calls = arguments.calls or (10 if on_gpu else 1)
    rounds = arguments.rounds or (5 if on_gpu else 1)
    dtype = torch.bfloat16 if on_gpu else torch.float32
    torch.backends.cudnn.benchmark = True
    generator = torch.Generator().manual_seed(7)

    def activations(*shape):  # NHWC memory, as phalanx holds activations
        samples, channels, height, width = shape
        values = torch.rand(samples, height, width, channels, generator=generator) * 4 - 2
        return values.to(device=device, dtype=dtype).permute(0, 3, 1, 2)

    def weights(*shape, scale=0.02):
        return (torch.randn(*shape, generator=generator) * scale).to(device=device, dtype=dtype).contiguous(
            memory_format=torch.channels_last if len(shape) == 4 else torch.contiguous_format)

    rows = []
    convolutions = [("conv 7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3), ("conv 3x3 64->64 @56", 64, 56, 64, 3, 1, 1),
                    ("conv 1x1 64->256 @56", 64, 56, 256, 1, 1, 0), ("conv 3x3 512->512 @7", 512, 7, 512, 3, 1, 1)]
    for name, in_channels, size, out_channels, kernel, stride, padding in convolutions:
        convolution_input = activations(batch, in_channels, size, size)
        weight = weights(out_channels, in_channels, kernel, kernel)
        rows.append((name + " forward", timed(lambda: F.conv2d(convolution_input, weight, None, stride, padding),
                                              calls, rounds, device)))
        output = F.conv2d(convolution_input, weight, None, stride, padding)
        grad_output = activations(*output.shape)
        mask = (in_channels != 3, True, False)  # the stem needs no input gradient, as in phalanx
        rows.append((name + " backward", timed(lambda: torch.ops.aten.convolution_backward(
            grad_output, convolution_input, weight, None, [stride, stride], [padding, padding], [1, 1], False,
            [0, 0], 1, mask), calls, rounds, device)))
    wide = (batch, 256, 56, 56)
    batch_norm_input = activations(*wide)
    gamma = torch.ones(256, device=device)
    beta = torch.zeros(256, device=device)
    running_mean, running_variance = torch.zeros(256, device=device), torch.ones(256, device=device)
    rows.append(("batch norm + ReLU 256 @56 training forward", timed(
        lambda: F.relu_(F.batch_norm(batch_norm_input, running_mean, running_variance, gamma, beta, True, 0.1,
                                     1e-5)),
        calls, rounds, device)))
    input_with_gradient = batch_norm_input.detach().requires_grad_(True)
    gamma_with_gradient = gamma.clone().requires_grad_(True)
    beta_with_gradient = beta.clone().requires_grad_(True)
    batch_norm_output = F.batch_norm(input_with_gradient, running_mean, running_variance, gamma_with_gradient,
                                     beta_with_gradient, True, 0.1, 1e-5)
    grad_batch_norm_output = activations(*wide)
    rows.append(("batch norm 256 @56 backward", timed(
        lambda: torch.autograd.grad(batch_norm_output,
                                    (input_with_gradient, gamma_with_gradient, beta_with_gradient),
                                    grad_batch_norm_output, retain_graph=True), calls, rounds, device)))
    output, grad = activations(*wide), activations(*wide)
    rows.append(("ReLU backward 256 @56", timed(lambda: torch.ops.aten.threshold_backward(grad, output, 0),
                                                calls, rounds, device)))
    left, right = activations(*wide), activations(*wide)
    rows.append(("add + ReLU 256 @56", timed(lambda: F.relu_(left + right), calls, rounds, device)))
    destination = activations(*wide)
    rows.append(("accumulate 256 @56", timed(lambda: destination.add_(left), calls, rounds, device)))
    pooled = activations(batch, 64, 112, 112)
    rows.append(("max pool 3x3/2 64 @112 forward", timed(lambda: F.max_pool2d(pooled, 3, 2, 1), calls, rounds,
                                                         device)))
    features = torch.rand(batch, 2048, generator=generator).to(device=device, dtype=dtype).requires_grad_(True)
    fc_weight = weights(1000, 2048).requires_grad_(True)
    fc_bias = weights(1000).requires_grad_(True)
    grad_logits = torch.rand(batch, 1000, generator=generator).to(device=device, dtype=dtype)

    def linear_step():
        logits = F.linear(features, fc_weight, fc_bias)
        torch.autograd.grad(logits, (features, fc_weight, fc_bias), grad_logits)

    rows.append(("linear 2048->1000 forward + backward", timed(linear_step, calls, rounds, device)))
    label = "torch bf16 channels_last" if on_gpu else "torch fp32"
    print(f"# torch device_ops: {torch.__version__} on {device}"
          f"{' (' + torch.cuda.get_device_name() + ')' if on_gpu else ''}, batch {batch}, "
          f"{calls} calls per timing, median of {rounds} rounds, ms per call")
    print(f"{'op':<46} {label:>24}")
    for name, milliseconds in rows:
        print(f"{name:<46} {milliseconds:>24.3f}")


if __name__ == "__main__":
    main()
