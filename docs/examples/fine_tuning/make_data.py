"""Fashion-MNIST resized to 32x32 with the grey replicated to RGB, as users feed grey images to
ImageNet models, cut into a source task (for the PyTorch pre-training) and a target task (for the
phalanx fine-tuning), written as plain HDF5 arrays that `phalanx data import-hdf5` maps.

Usage: python make_data.py IDX_FOLDER OUT.h5 [--target-per-class 500] [--source-classes 5] [--seed 0]

IDX_FOLDER holds the four Fashion-MNIST IDX files (`train-images-idx3-ubyte.gz`, ...). OUT.h5 gets
  x_target_train [10 x target-per-class, 32, 32, 3] uint8, y_target_train  the target's labelled
                 subset of the 60,000 training images, the same count from each of the 10 classes
  x_test [10000, 32, 32, 3] uint8, y_test           the official test set, all 10 classes
  x_source [N, 32, 32, 3] uint8, y_source           every other training image whose label is
                 below --source-classes (0-4: T-shirt/top, Trouser, Pullover, Dress, Coat)
  classes                                           the 10 class names
The source and target images are disjoint; labels are int64. Needs numpy, h5py and Pillow.
"""

import argparse
import gzip
import os
import struct
import sys

import h5py
import numpy as np
from PIL import Image

CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def read_idx(path):
    # IDX: a big-endian magic (0, 0, dtype 0x08 = uint8, rank), rank big-endian sizes, the bytes.
    with gzip.open(path, "rb") as file:
        data = file.read()
    zero, dtype, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"{path}: not an IDX file of uint8")
    shape = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank)
    if array.size != int(np.prod(shape)):
        sys.exit(f"{path}: {array.size} bytes of data, the header says {shape}")
    return array.reshape(shape)


def resize_to_rgb(images, size):
    # Pillow's bilinear resize per image (what `phalanx data import-images --size` does too), then
    # the grey channel copied into R, G and B.
    out = np.empty((len(images), size, size, 3), dtype=np.uint8)
    for index, image in enumerate(images):
        grey = np.asarray(Image.fromarray(image).resize((size, size), Image.BILINEAR))
        out[index] = grey[:, :, None]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("idx_folder")
    parser.add_argument("output")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--target-per-class", type=int, default=500)
    parser.add_argument("--source-classes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    def idx(name):
        return read_idx(os.path.join(args.idx_folder, name))

    train_images, train_labels = idx("train-images-idx3-ubyte.gz"), idx("train-labels-idx1-ubyte.gz")
    test_images, test_labels = idx("t10k-images-idx3-ubyte.gz"), idx("t10k-labels-idx1-ubyte.gz")

    # The target's labelled subset: target-per-class images of each class, drawn by seed; the
    # source task gets the remaining images of its classes, so no image is in both.
    generator = np.random.default_rng(args.seed)
    target = np.concatenate([
        generator.permutation(np.flatnonzero(train_labels == label))[:args.target_per_class]
        for label in range(len(CLASSES))])
    target = generator.permutation(target)
    in_target = np.zeros(len(train_labels), dtype=bool)
    in_target[target] = True
    source = np.flatnonzero(~in_target & (train_labels < args.source_classes))

    temporary = args.output + ".partial"
    with h5py.File(temporary, "w") as file:
        for name, images, labels in (("target_train", train_images[target], train_labels[target]),
                                     ("test", test_images, test_labels),
                                     ("source", train_images[source], train_labels[source])):
            file.create_dataset(f"x_{name}", data=resize_to_rgb(images, args.size))
            file.create_dataset(f"y_{name}", data=labels.astype(np.int64))
        file.create_dataset("classes", data=np.array(CLASSES, dtype=h5py.string_dtype()))
    os.replace(temporary, args.output)
    print(f"{args.output}: target train {len(target)}, test {len(test_labels)}, "
          f"source {len(source)} (classes 0-{args.source_classes - 1}), {args.size}x{args.size}x3")


if __name__ == "__main__":
    main()
