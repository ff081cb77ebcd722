"""End-to-end: `phalanx data import-idx | import-cifar | synth | inspect` on real Fashion-MNIST IDX files (a subset)
and on synthetic data; the written HDF5 files follow the dataset schema of docs/DESIGN.md §4."""

import os
import re
import shutil
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py


def setUpModule():
    global WORK
    WORK = e2e.work_dir("data_cli")


class ImportIdxTest(unittest.TestCase):
    TRAIN, TEST = 3000, 500

    @classmethod
    def setUpClass(cls):
        e2e.require_fashion()
        cls.idx_folder = os.path.join(WORK, "idx")
        cls.subset = e2e.write_fashion_subset_idx(cls.idx_folder, cls.TRAIN, cls.TEST)
        cls.output = os.path.join(WORK, "fashion-subset.h5")
        cls.imported = e2e.phalanx("data", "import-idx", cls.idx_folder, "-o", cls.output, "--classes", "fashion")

    def test_import_writes_the_schema_with_the_exact_pixels(self):
        self.assertEqual(self.imported.returncode, 0, self.imported.describe())
        with h5py.File(self.output, "r") as file:
            self.assertEqual(e2e.attr_text(file.attrs["format"]), "phalanx-dataset")
            self.assertEqual(int(file.attrs["version"]), 1)
            self.assertEqual([e2e.attr_text(name) for name in file.attrs["classes"]], e2e.FASHION_CLASSES)
            for split, count, images_name, labels_name in (
                    ("train", self.TRAIN, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
                    ("test", self.TEST, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")):
                images, labels = file[f"/{split}/images"], file[f"/{split}/labels"]
                self.assertEqual(images.dtype, np.uint8, split)
                self.assertEqual(images.shape, (count, 28, 28, 1), split)
                self.assertEqual(labels.dtype, np.int32, split)
                self.assertEqual(labels.shape, (count,), split)
                np.testing.assert_array_equal(images[()][..., 0], self.subset[images_name], err_msg=split)
                np.testing.assert_array_equal(labels[()], self.subset[labels_name].astype(np.int32), err_msg=split)
            # mean/std: of the training images, per channel, in [0, 1] units
            train = self.subset["train-images-idx3-ubyte.gz"].astype(np.float64) / 255.0
            mean, std = file["/train/images"].attrs["mean"], file["/train/images"].attrs["std"]
            self.assertEqual(mean.dtype, np.float32)
            self.assertEqual(std.dtype, np.float32)
            self.assertEqual(mean.shape, (1,))
            self.assertAlmostEqual(float(mean[0]), train.mean(), places=4)
            self.assertAlmostEqual(float(std[0]), train.std(), delta=2e-3 * train.std())

    def test_inspect_shows_classes_and_counts(self):
        self.assertEqual(self.imported.returncode, 0, self.imported.describe())
        result = e2e.phalanx("data", "inspect", self.output)
        self.assertEqual(result.returncode, 0, result.describe())
        text = result.stdout
        self.assertIn("phalanx-dataset", text)
        self.assertIn("classes (10)", text)
        for name in e2e.FASHION_CLASSES:
            self.assertIn(name, text)
        self.assertRegex(text, rf"(?m)^train\s+{self.TRAIN}\s+{self.TRAIN} x 28 x 28 x 1\s*$")
        self.assertRegex(text, rf"(?m)^test\s+{self.TEST}\s+{self.TEST} x 28 x 28 x 1\s*$")
        # the label histogram: one row per class with the per-split counts of the subset
        train_labels = self.subset["train-labels-idx1-ubyte.gz"]
        test_labels = self.subset["t10k-labels-idx1-ubyte.gz"]
        for label, name in enumerate(e2e.FASHION_CLASSES):
            expected = (rf"(?m)^\s*{label}\s+{re.escape(name)}\s+{int((train_labels == label).sum())}"
                        rf"\s+{int((test_labels == label).sum())}\s*$")
            self.assertRegex(text, expected)

    def test_import_of_a_folder_lacking_a_file_exits_2_naming_it(self):
        for missing in ("t10k-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz"):
            with self.subTest(missing=missing):
                folder = os.path.join(WORK, "incomplete-" + missing.split("-")[0] + missing.split("-")[1])
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(self.idx_folder, folder)
                os.remove(os.path.join(folder, missing))
                output = os.path.join(WORK, "incomplete.h5")
                result = e2e.phalanx("data", "import-idx", folder, "-o", output)
                self.assertEqual(result.returncode, 2, result.describe())
                self.assertIn(missing, result.stderr, result.describe())
                self.assertEqual(len(result.error_lines()), 1, result.describe())
                self.assertFalse(os.path.exists(output), "a failed import must not leave an output file")
                self.assertEqual([n for n in os.listdir(WORK) if n.startswith("incomplete.h5")], [],
                                 "a failed import must not leave temporary files")

    def test_custom_class_list_must_cover_the_labels(self):
        # 10 labels but 3 names: an input error naming --classes or the labels, nothing written
        output = os.path.join(WORK, "three-classes.h5")
        result = e2e.phalanx("data", "import-idx", self.idx_folder, "-o", output, "--classes", "a,b,c")
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertEqual(len(result.error_lines()), 1, result.describe())
        self.assertFalse(os.path.exists(output))


class ImportCifarTest(unittest.TestCase):
    def test_import_cifar10_converts_to_nhwc_and_carves_val_by_seed(self):
        # Five small batches of planar R, G, B records with random pixels, as the archive holds them.
        folder = os.path.join(WORK, "cifar", "cifar-10-batches-bin")
        os.makedirs(folder, exist_ok=True)
        generator = np.random.default_rng(11)
        planar = {}
        for name, count in [(f"data_batch_{batch}.bin", 6) for batch in range(1, 6)] + [("test_batch.bin", 7)]:
            labels = generator.integers(0, 10, count, dtype=np.uint8)
            pixels = generator.integers(0, 256, (count, 3, 32, 32), dtype=np.uint8)
            with open(os.path.join(folder, name), "wb") as file:
                file.write(np.concatenate([labels[:, None], pixels.reshape(count, -1)], axis=1).tobytes())
            planar[name] = (labels, pixels)
        train_labels = np.concatenate([planar[f"data_batch_{batch}.bin"][0] for batch in range(1, 6)])
        train_images = np.concatenate([planar[f"data_batch_{batch}.bin"][1] for batch in range(1, 6)])
        train_images = train_images.transpose(0, 2, 3, 1)  # NCHW -> NHWC

        outputs = [os.path.join(WORK, name) for name in ("cifar-a.h5", "cifar-b.h5")]
        for output in outputs:
            result = e2e.phalanx("data", "import-cifar", os.path.dirname(folder), "-o", output,
                                 "--val-fraction", 0.2, "--seed", 9, "--chunk", 8, "--gzip", 1)
            self.assertEqual(result.returncode, 0, result.describe())
        self.assertRegex(result.stdout, r"(?m)^val\s+6\s+6 x 32 x 32 x 3\s*$")
        with h5py.File(outputs[0], "r") as file, h5py.File(outputs[1], "r") as again:
            self.assertEqual([e2e.attr_text(name) for name in file.attrs["classes"]][:3],
                             ["airplane", "automobile", "bird"])
            np.testing.assert_array_equal(file["/test/images"][()], planar["test_batch.bin"][1].transpose(0, 2, 3, 1))
            np.testing.assert_array_equal(file["/test/labels"][()], planar["test_batch.bin"][0].astype(np.int32))
            self.assertEqual(file["/train/images"].shape, (24, 32, 32, 3))
            self.assertEqual(file["/val/images"].shape, (6, 32, 32, 3))
            # train and val partition the original train records, each keeping the file order
            merged = np.concatenate([file["/train/images"][()], file["/val/images"][()]])
            merged_labels = np.concatenate([file["/train/labels"][()], file["/val/labels"][()]])
            source = [int(np.flatnonzero((train_images == image).all(axis=(1, 2, 3)))[0]) for image in merged]
            self.assertEqual(sorted(source), list(range(30)))
            np.testing.assert_array_equal(merged_labels, train_labels[source].astype(np.int32))
            np.testing.assert_array_equal(file["/val/images"][()], again["/val/images"][()])

        bad = e2e.phalanx("data", "import-cifar", os.path.dirname(folder), "-o", os.path.join(WORK, "bad.h5"),
                          "--val-fraction", 0.7)
        self.assertEqual(bad.returncode, 2, bad.describe())
        self.assertIn("--val-fraction", bad.stderr)
        self.assertFalse(os.path.exists(os.path.join(WORK, "bad.h5")))


class SynthTest(unittest.TestCase):
    def test_synth_writes_a_file_inspect_reads(self):
        path = os.path.join(WORK, "synth.h5")
        result = e2e.phalanx("data", "synth", "-o", path, "--train", 200, "--test", 50, "--height", 12,
                             "--width", 10, "--channels", 3, "--classes", 4, "--seed", 7)
        self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(path, "r") as file:
            self.assertEqual(e2e.attr_text(file.attrs["format"]), "phalanx-dataset")
            self.assertEqual(len(file.attrs["classes"]), 4)
            self.assertEqual(file["/train/images"].shape, (200, 12, 10, 3))
            self.assertEqual(file["/train/images"].dtype, np.uint8)
            self.assertEqual(file["/test/images"].shape, (50, 12, 10, 3))
            labels = file["/train/labels"][()]
            self.assertEqual(labels.dtype, np.int32)
            self.assertTrue(((labels >= 0) & (labels < 4)).all())
            self.assertGreater(len(np.unique(labels)), 1, "synthetic labels should use several classes")
            self.assertEqual(file["/train/images"].attrs["mean"].shape, (3,))
            self.assertEqual(file["/train/images"].attrs["std"].shape, (3,))
            images = file["/train/images"][()].astype(np.float64) / 255.0
            np.testing.assert_allclose(file["/train/images"].attrs["mean"], images.mean(axis=(0, 1, 2)), atol=1e-3)
            counts = np.bincount(labels, minlength=4)
            test_counts = np.bincount(file["/test/labels"][()], minlength=4)
        inspected = e2e.phalanx("data", "inspect", path)
        self.assertEqual(inspected.returncode, 0, inspected.describe())
        self.assertIn("classes (4)", inspected.stdout)
        self.assertRegex(inspected.stdout, r"(?m)^train\s+200\s+200 x 12 x 10 x 3\s*$")
        self.assertRegex(inspected.stdout, r"(?m)^test\s+50\s+50 x 12 x 10 x 3\s*$")
        for label in range(4):
            self.assertRegex(inspected.stdout, rf"(?m)^\s*{label}\s+\S+\s+{counts[label]}\s+{test_counts[label]}\s*$")

    def test_synth_of_sizes_no_memory_holds_exits_2_naming_them(self):
        # They used to end in std::bad_alloc or a vector length error (exit 1, naming nothing).
        for args, fragment in ((("--train", 9000000000000000000, "--test", 1), "--train 9000000000000000000"),
                               (("--height", 2147483647, "--width", 2147483647), "has a side over 65536"),
                               (("--classes", 2000000000, "--height", 1, "--width", 1), "class count 2000000000")):
            path = os.path.join(WORK, "synth-absurd.h5")
            result = e2e.phalanx("data", "synth", "-o", path, *args, timeout=60)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertEqual(len(result.error_lines()), 1, result.describe())
            self.assertIn(fragment, result.stderr)
            self.assertFalse(os.path.exists(path), "a refused synth left a file")

    def test_synth_is_deterministic_in_its_seed(self):
        paths = [os.path.join(WORK, f"synth-seed-{index}.h5") for index in range(3)]
        for path, seed in zip(paths, (5, 5, 6)):
            result = e2e.phalanx("data", "synth", "-o", path, "--train", 64, "--test", 16, "--seed", seed)
            self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(paths[0], "r") as a, h5py.File(paths[1], "r") as b, h5py.File(paths[2], "r") as c:
            np.testing.assert_array_equal(a["/train/images"][()], b["/train/images"][()])
            self.assertFalse(np.array_equal(a["/train/images"][()], c["/train/images"][()]),
                             "a different --seed should give different images")

    def test_preview_into_a_folder_that_takes_no_files_exits_2_naming_it(self):
        # /proc refuses new files even to root, who may write anywhere else.
        data = e2e.make_synth(os.path.join(WORK, "synth-preview.h5"), train=32, test=8)
        output = "/proc/phalanx-preview.png"
        result = e2e.phalanx("data", "preview", data, "-o", output)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertEqual(len(result.error_lines()), 1, result.describe())
        self.assertRegex(result.error_lines()[0], r"^phalanx: error: rank 0: /proc/phalanx-preview\.png: ")

    def test_inspect_of_a_missing_file_exits_2_naming_it(self):
        path = os.path.join(WORK, "no-such-dataset.h5")
        result = e2e.phalanx("data", "inspect", path)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("no-such-dataset.h5", result.stderr)
        self.assertEqual(len(result.error_lines()), 1, result.describe())

    def test_inspect_of_a_damaged_global_heap_exits_2_at_once(self):
        # A fuzzer's input on which HDF5 1.10 spun forever: the checked file driver refuses its
        # global heap collection, so inspect names the file, the attribute and the damage.
        path = os.path.join(e2e.SOURCE_DIR, "tests", "fuzz", "regressions", "dataset", "hdf5_vlen_class_names_loop.h5")
        result = e2e.phalanx("data", "inspect", path, timeout=60)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertEqual(len(result.error_lines()), 1, result.describe())
        self.assertIn(f'{path}: attribute "format" of /: cannot be read: the global heap collection at byte 2048 '
                      "is damaged", result.error_lines()[0])


if __name__ == "__main__":
    e2e.main()
