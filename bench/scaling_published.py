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

HOROVOD = ("Sergeev & Del Balso 2018 (Horovod, arXiv:1802.05799; docs/benchmarks: 4 Pascal GPUs per server, "
           "25 Gbit/s RoCE, tf_cnn_benchmarks --batch_size 64)")
TF_P100 = "TensorFlow performance benchmarks 2017, P100 (DGX-1), synthetic data, batch 64 per GPU"
DDP = ("PyTorch DDP benchmark README (benchmarks/distributed/ddp/README.md: 8 V100 per DGX node, "
       "4 x 100 Gbit/s InfiniBand, batch 32, bucket 25 MB)")
GOYAL = ("Goyal et al. 2017 (arXiv:1706.02677: Big Basin servers, 8 P100 with NVLink, 50 Gbit/s Ethernet, "
         "32 images per GPU)")

# study, model, nodes, GPUs per node, fabric, batch per GPU, bucket MB, one device's images/s and where it
# comes from, published efficiency (%), the node count it is relative to (1: one device)
CASES = [
    (HOROVOD, "inception_v3", 32, 4, "roce-25g", 64, 64, 142, TF_P100, 90, None),
    (HOROVOD, "inception_v3", 128, 4, "roce-25g", 64, 64, 142, TF_P100, 90, None),
    # ResNet-101 is not on the TensorFlow page: ResNet-152's 91.8 images/s scaled by the multiply-adds
    # of the two (11.5 G / 7.8 G per image).
    (HOROVOD, "resnet101", 32, 4, "roce-25g", 64, 64, 91.8 * 11.5 / 7.8, TF_P100 + " (ResNet-152 scaled by multiply-adds)",
     90, None),
    (HOROVOD, "resnet101", 128, 4, "roce-25g", 64, 64, 91.8 * 11.5 / 7.8, TF_P100 + " (ResNet-152 scaled by multiply-adds)",
     90, None),
    (HOROVOD, "vgg16", 32, 4, "roce-25g", 64, 64, 154, TF_P100, 68, None),
    (HOROVOD, "vgg16", 128, 4, "roce-25g", 64, 64, 154, TF_P100, 68, None),
    (DDP, "resnet50", 2, 8, "ib-4x100g", 32, 25, 329, "the README's 1 GPU, no DDP: 329 images/s", 93, None),
    # Goyal et al. give the efficiency from one server (8 GPUs) to 32.
    (GOYAL, "resnet50", 32, 8, "ethernet-50g", 32, 25, 32 / 0.26,
     "about 0.26 s per iteration of one server at 32 images per GPU (Goyal et al.)", 90, 1),
]

# Horovod's fusion buffer (HOROVOD_FUSION_THRESHOLD) is 64 MB; DDP's bucket_cap_mb 25.


def predict(phalanx, model, nodes, gpus_per_node, fabric, batch, bucket_mb, images_per_second):
    command = [phalanx, "scaling", "--layers", os.path.join(TABLES, f"{model}.json"), "--batch-size", str(batch),
               "--gpus-per-node", str(gpus_per_node), "--fabric", fabric, "--images-per-second",
               str(images_per_second), "--bucket-mb", str(bucket_mb), "--sweep-nodes", f"1,{nodes}", "--json"]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)["predictions"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    phalanx, check = sys.argv[1], "--check" in sys.argv[2:]
    print(f"{'model':<13} {'GPUs':>5} {'fabric':<13} {'img/s 1 GPU':>11} {'exposed %':>9} {'predicted':>9} "
          f"{'published':>9} {'points':>7}  source")
    worst = {}
    sources = []
    for study, model, nodes, gpus, fabric, batch, bucket, rate, rate_source, published, base in CASES:
        one_node, scaled = predict(phalanx, model, nodes, gpus, fabric, batch, bucket, rate)
        efficiency = scaled["efficiency"] / (one_node["efficiency"] if base else 1.0)
        predicted = 100 * efficiency
        worst[model] = min(worst.get(model, 100.0), predicted)
        if study not in sources:
            sources.append(study)
        print(f"{model:<13} {nodes * gpus:>5} {fabric:<13} {rate:>11.1f} {100 * scaled['exposed_share']:>9.1f} "
              f"{predicted:>8.1f}% {published:>8.0f}% {predicted - published:>+7.1f}  [{sources.index(study) + 1}] "
              f"{'relative to one node; ' if base else ''}one device: {rate_source}")
    print()
    for index, source in enumerate(sources, 1):
        print(f"[{index}] {source}")
    vgg_worst = worst["vgg16"] < min(value for model, value in worst.items() if model != "vgg16")
    print(f"VGG-16 predicted the worst: {'yes' if vgg_worst else 'no'}")
    if check and not vgg_worst:
        sys.exit(1)


if __name__ == "__main__":
    main()
