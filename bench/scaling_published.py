#!/usr/bin/env python3
"""`phalanx scaling` against published data-parallel scaling results, with nothing fitted to them: each
prediction takes the paper's hardware (GPUs per node, network, intra-node link: a fabric preset), its
per-GPU batch and bucket (fusion) size, and one device's training images/s as published, and the model's
layers from the torchvision definitions (bench/layer_tables, written by bench/layer_tables.py).

    python3 bench/scaling_published.py PHALANX [--check]

Prints one row per published figure: the prediction, the published efficiency and the difference in
points. --check exits 1 unless VGG-16 is predicted the worst (the ordering the model must get right).
"""

import json
import os
import subprocess
import sys

TABLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_tables")

# Sources, each figure checked against it (docs/BENCHMARKS.md has the quotes' places).
HOROVOD_512 = ("Horovod's README and docs/benchmarks.md (since 2018-05-10; not in the arXiv:1802.05799 paper): "
               "128 servers x 4 Pascal GPUs, RoCE-capable 25 Gbit/s, tf_cnn_benchmarks --batch_size 64: 90% "
               "Inception V3 and ResNet-101, 68% VGG-16")
HOROVOD_128 = ("Horovod's README, 2017-10-17 to 2018-05-10: 32 servers x 4 Pascal GPUs, RoCE-capable 25 Gbit/s, "
               "batch 64: 90% Inception V3 and ResNet-101, 79% VGG-16")
HOROVOD_ONE = "Horovod's README of 2017-09-05, its 25 Gbit/s RoCE servers: baseline single-GPU, batch 64"
HOROVOD_16 = ("Horovod's README of 2017-09-05 (commit d54e3a88): 4 servers x 4 Pascal GPUs, RoCE-capable 25 Gbit/s, "
              "batch 64, RDMA Horovod (allreduce on GPU with NCCL): 15.0x Inception V3, 14.6x ResNet-101, 13.7x "
              "VGG-16 of the single-GPU baseline on 16 GPUs")
DDP = ("PyTorch DDP benchmark README (benchmarks/distributed/ddp/README.md: 8 V100 per DGX node, "
       "4 x 100 Gbit/s InfiniBand, batch 32, bucket 25 MB; 1 GPU no DDP 329/s, 1 GPU with DDP 319/s, "
       "2 / 8 / 16 GPUs 310 / 307 / 306/s each)")
# The DDP README times one GPU twice: alone (329/s, the efficiency's baseline) and wrapped in DDP with no
# one to reduce with (319/s). The second is one device's training throughput with the framework's own
# per-step work (its gradient hooks, the copies into and out of the buckets) and no network: the model's
# compute time. Its efficiency is then taken against the first, as the README's is. Horovod's READMEs
# give only the baseline, so its rows use that for both.
DDP_ALONE = 329
GOYAL = ("Goyal et al. 2017 (arXiv:1706.02677, 4.3 and 5.5: Big Basin servers, 8 P100 with NVLink, 50 Gbit/s "
         "Ethernet, 32 images per GPU; ~90% from 8 to 256 GPUs)")
# Goyal et al. give no one-server iteration time as a number (their Figure 7 plots it): 29 h for 90
# epochs on 8 GPUs (1) is 0.232 s per iteration of 256 images, and 30 s per epoch on 352 GPUs with
# iterations 12% slower than one server's (5.5) is 0.264 / 1.12 = 0.236 s. The mean, 0.234 s.
GOYAL_ITERATION = (0.232 + 0.236) / 2

# NCCL's algorithms in the study's time: Horovod's results (2017-10 and 2018-05) predate NCCL 2.4.2
# (2018-12-13), the release that added trees, so its all-reduces were rings. The DDP README (2019)
# ran on NCCL 2.4 or later. Goyal et al. reduced across servers with Gloo's own algorithms, not NCCL:
# the model gives it NCCL's choice, the nearest it has.
RINGS_ONLY = "ring"
RING_AND_TREE = "ring,tree"

# Whose buckets (`--buckets-as`): Horovod fused the tensors ready in each 5 ms cycle, whole, up to its
# 64 MB fusion threshold (horovod/common/operations.cc of the time: a 5 ms sleep per cycle, a tensor
# past the threshold alone); DDP fills buckets with whole parameters up to bucket_cap_mb. Goyal et al.
# give no bucket: phalanx's cut at DDP's 25 MB stands in.

# study, model, nodes, GPUs per node, fabric, NCCL algorithms, whose buckets, batch per GPU, bucket MB, one device's
# images/s and where it comes from, published efficiency (%), the node count it is relative to (1: one
# node; None: one device), the images/s the efficiency is relative to (None: one device's)
CASES = [
    (HOROVOD_128, "inception_v3", 32, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 134.4, HOROVOD_ONE, 90, None, None),
    (HOROVOD_512, "inception_v3", 128, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 134.4, HOROVOD_ONE, 90, None, None),
    (HOROVOD_128, "resnet101", 32, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 119.4, HOROVOD_ONE, 90, None, None),
    (HOROVOD_512, "resnet101", 128, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 119.4, HOROVOD_ONE, 90, None, None),
    (HOROVOD_128, "vgg16", 32, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 130.9, HOROVOD_ONE, 79, None, None),
    (HOROVOD_512, "vgg16", 128, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 130.9, HOROVOD_ONE, 68, None, None),
    (DDP, "resnet50", 2, 8, "ib-4x100g", RING_AND_TREE, "ddp", 32, 25, 319,
     "the README's 1 GPU with DDP: 319 images/s; efficiency against its 1 GPU without: 329", 93, None, DDP_ALONE),
    # Goyal et al. give the efficiency from one server (8 GPUs) to 32.
    (GOYAL, "resnet50", 32, 8, "ethernet-50g", RING_AND_TREE, "phalanx", 32, 25, 32 / GOYAL_ITERATION,
     "0.234 s per iteration of one server at 32 images per GPU (derived from Goyal et al.'s 1 and 5.5)", 90, 1, None),
]

# The same studies' figures at a few GPUs, where the network is not the limit: not the figures the check
# is about, but they show at what scale the model's optimism appears. Horovod's 2017-09-05 README already
# had its tensor fusion (64 MB, a 5 ms cycle: horovod/tensorflow/mpi_ops.cc at d54e3a88).
SMALL_SCALE = [
    (HOROVOD_16, "inception_v3", 4, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 134.4, HOROVOD_ONE, 15.0 / 16 * 100,
     None, None),
    (HOROVOD_16, "resnet101", 4, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 119.4, HOROVOD_ONE, 14.6 / 16 * 100,
     None, None),
    (HOROVOD_16, "vgg16", 4, 4, "roce-25g", RINGS_ONLY, "horovod", 64, 64, 130.9, HOROVOD_ONE, 13.7 / 16 * 100,
     None, None),
    (DDP, "resnet50", 1, 2, "ib-4x100g", RING_AND_TREE, "ddp", 32, 25, 319,
     "the README's 1 GPU with DDP: 319 images/s; efficiency against its 1 GPU without: 329", 310 / 329 * 100, None,
     DDP_ALONE),
    (DDP, "resnet50", 1, 8, "ib-4x100g", RING_AND_TREE, "ddp", 32, 25, 319,
     "the README's 1 GPU with DDP: 319 images/s; efficiency against its 1 GPU without: 329", 307 / 329 * 100, None,
     DDP_ALONE),
]

# Horovod's fusion buffer (HOROVOD_FUSION_THRESHOLD) is 64 MB; DDP's bucket_cap_mb 25.


def predict(phalanx, model, nodes, gpus_per_node, fabric, algorithms, buckets, batch, bucket_mb,
            images_per_second):
    command = [phalanx, "scaling", "--layers", os.path.join(TABLES, f"{model}.json"), "--batch-size", str(batch),
               "--gpus-per-node", str(gpus_per_node), "--fabric", fabric, "--nccl-algo", algorithms,
               "--buckets-as", buckets,
               "--images-per-second",
               str(images_per_second), "--bucket-mb", str(bucket_mb), "--sweep-nodes", f"1,{nodes}", "--json"]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)["predictions"]


def print_table(phalanx, cases, sources, worst):
    print(f"{'model':<13} {'GPUs':>5} {'fabric':<13} {'NCCL':<9} {'buckets':<8} {'img/s 1 GPU':>11} "
          f"{'exposed %':>9} {'predicted':>9} {'published':>9} {'points':>7}  source")
    for (study, model, nodes, gpus, fabric, algorithms, buckets, batch, bucket, rate, rate_source, published,
         base, baseline) in cases:
        one_node, scaled = predict(phalanx, model, nodes, gpus, fabric, algorithms, buckets, batch, bucket, rate)
        efficiency = scaled["efficiency"] / (one_node["efficiency"] if base else 1.0)
        # The model's efficiency is against one device at `rate`; the study's is against `baseline`.
        predicted = 100 * efficiency * (rate / baseline if baseline else 1.0)
        worst[model] = min(worst.get(model, 100.0), predicted)
        if study not in sources:
            sources.append(study)
        print(f"{model:<13} {nodes * gpus:>5} {fabric:<13} {algorithms:<9} {buckets:<8} {rate:>11.1f} "
              f"{100 * scaled['exposed_share']:>9.1f} {predicted:>8.1f}% {published:>8.1f}% "
              f"{predicted - published:>+7.1f}  [{sources.index(study) + 1}] "
              f"{'relative to one node; ' if base else ''}one device: {rate_source}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    phalanx, check = sys.argv[1], "--check" in sys.argv[2:]
    worst, sources = {}, []
    print_table(phalanx, CASES, sources, worst)
    vgg_worst = worst["vgg16"] < min(value for model, value in worst.items() if model != "vgg16")
    print()
    print("The same studies at a few GPUs (not checked; where the difference appears):")
    print_table(phalanx, SMALL_SCALE, sources, {})
    print()
    for index, source in enumerate(sources, 1):
        print(f"[{index}] {source}")
    print(f"VGG-16 predicted the worst: {'yes' if vgg_worst else 'no'}")
    if check and not vgg_worst:
        sys.exit(1)


if __name__ == "__main__":
    main()
