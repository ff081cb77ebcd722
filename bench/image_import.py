#!/usr/bin/env python3
"""Throughput and peak memory of `phalanx data import-images` against Pillow's decode and resize.

Writes a seeded tree of JPEGs (default 4 classes x 1000 images of 320x256, quality 90), then times,
interleaved over --repeats rounds, on the same tree:
  - phalanx import-images at --size HxW with --threads 1 and --threads N (N: every core by default);
  - optionally a second phalanx binary (--baseline, e.g. an older build), its default threads;
  - Pillow as a PyTorch ImageFolder pipeline decodes: open, convert("RGB"), resize(BILINEAR), in a
    pool of 1 and N processes (the work a DataLoader's workers repeat every epoch).
Prints medians of wall time, images/s and the phalanx processes' peak resident memory (GNU time's
%M). Needs Pillow and numpy (the PyTorch venv has both) and /usr/bin/time.

  python bench/image_import.py build/src/phalanx --size 128x128 --repeats 3
"""

import argparse
import multiprocessing
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np
from PIL import Image


def make_tree(root, classes, per_class, width, height):
    rng = np.random.default_rng(0)
    for label in range(classes):
        folder = os.path.join(root, f"class{label}")
        os.makedirs(folder, exist_ok=True)
        for index in range(per_class):
            # Smooth content (a bicubic blow-up of 16x16 noise) compresses like a photograph would.
            small = rng.integers(0, 256, size=(16, 16, 3), dtype=np.uint8)
            Image.fromarray(small).resize((width, height), Image.BICUBIC).save(
                os.path.join(folder, f"{index:05d}.jpg"), quality=90)


def run_phalanx(binary, tree, output, size, extra):
    if os.path.exists(output):
        os.remove(output)
    command = ["/usr/bin/time", "-f", "%M", binary, "data", "import-images", tree, "-o", output, "--size", size]
    start = time.perf_counter()
    result = subprocess.run(command + extra, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command + extra)} failed:\n{result.stderr}")
    peak_kb = int(result.stderr.strip().splitlines()[-1])
    return seconds, peak_kb


def pillow_one(arguments):
    path, width, height = arguments
    with Image.open(path) as image:
        return image.convert("RGB").resize((width, height), Image.BILINEAR).tobytes()[:1]


def run_pillow(files, width, height, processes):
    start = time.perf_counter()
    with multiprocessing.Pool(processes) as pool:
        for _ in pool.imap_unordered(pillow_one, [(path, width, height) for path in files], chunksize=64):
            pass
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phalanx")
    parser.add_argument("--baseline", help="another phalanx binary to time beside it")
    parser.add_argument("--size", default="128x128", help="stored size HxW")
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--per-class", type=int, default=1000)
    parser.add_argument("--source-size", default="256x320", help="the JPEGs' size HxW")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=None, help="folder for the tree and outputs (default: a temporary one)")
    args = parser.parse_args()
    source_height, source_width = (int(side) for side in args.source_size.split("x"))
    height, width = (int(side) for side in args.size.split("x"))

    work = args.work or tempfile.mkdtemp(prefix="image-import-")
    tree = os.path.join(work, "tree")
    if not os.path.isdir(tree):
        make_tree(tree, args.classes, args.per_class, source_width, source_height)
    files = sorted(os.path.join(folder, name) for folder, _, names in os.walk(tree) for name in names)
    output = os.path.join(work, "out.h5")

    cases = [("phalanx, 1 thread", lambda: run_phalanx(args.phalanx, tree, output, args.size, ["--threads", "1"])),
             (f"phalanx, {args.threads} threads",
              lambda: run_phalanx(args.phalanx, tree, output, args.size, ["--threads", str(args.threads)]))]
    if args.baseline:
        cases.append(("baseline binary", lambda: run_phalanx(args.baseline, tree, output, args.size, [])))
    cases += [("Pillow, 1 process", lambda: (run_pillow(files, width, height, 1), None)),
              (f"Pillow, {args.threads} processes", lambda: (run_pillow(files, width, height, args.threads), None))]
    times = {name: [] for name, _ in cases}
    peaks = {name: [] for name, _ in cases}
    for _ in range(args.repeats):
        for name, case in cases:
            seconds, peak = case()
            times[name].append(seconds)
            if peak is not None:
                peaks[name].append(peak)
    print(f"{len(files)} JPEGs of {args.source_size} to {args.size}, {args.repeats} rounds, medians")
    print("| case | wall | images/s | peak memory |")
    print("|---|---:|---:|---:|")
    for name, _ in cases:
        wall = statistics.median(times[name])
        peak = f"{statistics.median(peaks[name]) / 1024:.0f} MB" if peaks[name] else ""
        print(f"| {name} | {wall:.2f} s | {len(files) / wall:,.0f} | {peak} |")


if __name__ == "__main__":
    main()
