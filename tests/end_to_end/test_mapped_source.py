"""End-to-end: data.source reads a user's own HDF5 files in place (docs/DATA.md).
- Six layouts built here with h5py from the real Fashion-MNIST (separate image and label files,
  split-named datasets in one file with class names, NCHW float in [0, 1], one-hot labels,
  (N,1,1,1) labels, no test split) train to bitwise the weights of the same data imported
  natively with `phalanx data import-idx` (the carved one: of its `phalanx data import-hdf5` copy,
  whose splits are checked to be stratified).
- The mapped source streams (data.cache: none), fills a node cache over 2 ranks, augments and
  resumes exactly, as a native file does; the mean/std sidecar is written once and reused, and
  only once the run is accepted (a refused run leaves no folder).
- `phalanx eval` and `predict` without --data evaluate a checkpoint on the mapped source it was
  trained on, exactly as on the same data imported natively.
- `phalanx data inspect` prints any HDF5 file's tree and a data.source block that trains as pasted,
  also over images and labels kept in separate files.
- Every bad input exits 2 with one message naming the file, the dataset and the key."""

import os
import re
import unittest

import h5py
import numpy as np

import e2e_common as e2e

TRAIN, TEST = 1200, 300
LAYERS = [
    {"type": "conv", "name": "conv1", "out_channels": 6, "kernel": 3, "padding": 1},
    {"type": "relu"},
    {"type": "max_pool", "kernel": 2},
    {"type": "flatten"},
    {"type": "linear", "name": "fc", "out_features": 10},
]


def setUpModule():
    global WORK, NATIVE, ARRAYS
    WORK = e2e.work_dir("mapped_source")
    NATIVE = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    with h5py.File(NATIVE, "r") as file:
        ARRAYS = {name: file[name][...] for name in
                  ("/train/images", "/train/labels", "/test/images", "/test/labels")}
        ARRAYS["classes"] = [e2e.attr_text(name) for name in file.attrs["classes"]]


def path(name):
    return os.path.join(WORK, name)


def one_hot(labels):
    rows = np.zeros((len(labels), 10), dtype=np.float32)
    rows[np.arange(len(labels)), labels] = 1.0
    return rows


def build_layouts():
    """{name: data.source block} of the six layouts (files made once)."""
    train_x, train_y = ARRAYS["/train/images"], ARRAYS["/train/labels"]
    test_x, test_y = ARRAYS["/test/images"], ARRAYS["/test/labels"]
    layouts = {}
    # 1. Images and labels in separate files per split; [N,H,W] uint8, int64 labels, no class names.
    for split, images, labels in (("train", train_x, train_y), ("test", test_x, test_y)):
        with h5py.File(path(f"x_{split}.h5"), "w") as file:
            file["x"] = images[..., 0]
        with h5py.File(path(f"y_{split}.h5"), "w") as file:
            file["y"] = labels.astype(np.int64)
    layouts["separate_files"] = {
        "train": {"images": path("x_train.h5") + ":/x", "labels": path("y_train.h5") + ":/y"},
        "test": {"images": path("x_test.h5") + ":/x", "labels": path("y_test.h5") + ":/y"}}
    # 2. Split-named datasets in one file, NHWC uint8 chunked like the native file, (N,1) labels and
    #    byte-string class names.
    with h5py.File(path("all.h5"), "w") as file:
        file.create_dataset("X_train", data=train_x, chunks=(1024, 28, 28, 1))
        file["y_train"] = train_y.reshape(-1, 1).astype(np.uint8)
        file.create_dataset("X_test", data=test_x, chunks=(300, 28, 28, 1))
        file["y_test"] = test_y.reshape(-1, 1).astype(np.uint8)
        file["list_classes"] = np.array([name.encode() for name in ARRAYS["classes"]], dtype="S")
    layouts["one_file"] = {
        "train": {"images": path("all.h5") + ":/X_train", "labels": path("all.h5") + ":/y_train"},
        "test": {"images": path("all.h5") + ":/X_test", "labels": path("all.h5") + ":/y_test"},
        "classes": path("all.h5") + ":/list_classes"}
    # 3. Groups per split, NCHW float32 in [0, 1] (gzip, chunked along N as the native file), float labels.
    with h5py.File(path("nchw.h5"), "w") as file:
        for split, images, labels in (("train", train_x, train_y), ("test", test_x, test_y)):
            planar = (images.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255.0))
            file.create_dataset(f"{split}/images", data=planar, chunks=(min(1024, len(planar)), 1, 28, 28),
                                compression="gzip", compression_opts=1)
            file[f"{split}/labels"] = labels.astype(np.float64)
    layouts["nchw_float"] = {
        "train": {"images": path("nchw.h5") + ":/train/images", "labels": path("nchw.h5") + ":/train/labels"},
        "test": {"images": path("nchw.h5") + ":/test/images", "labels": path("nchw.h5") + ":/test/labels"}}
    # 4. One-hot float labels.
    with h5py.File(path("one_hot.h5"), "w") as file:
        file["train_images"], file["train_onehot"] = train_x, one_hot(train_y)
        file["test_images"], file["test_onehot"] = test_x, one_hot(test_y)
    layouts["one_hot"] = {
        "train": {"images": path("one_hot.h5") + ":/train_images", "labels": path("one_hot.h5") + ":/train_onehot"},
        "test": {"images": path("one_hot.h5") + ":/test_images", "labels": path("one_hot.h5") + ":/test_onehot"}}
    # 5. (N,1,1,1) labels.
    with h5py.File(path("n1111.h5"), "w") as file:
        file["xtr"], file["ytr"] = train_x, train_y.reshape(-1, 1, 1, 1)
        file["xte"], file["yte"] = test_x, test_y.reshape(-1, 1, 1, 1)
    layouts["labels_n1111"] = {
        "train": {"images": path("n1111.h5") + ":/xtr", "labels": path("n1111.h5") + ":/ytr"},
        "test": {"images": path("n1111.h5") + ":/xte", "labels": path("n1111.h5") + ":/yte"}}
    # 6. No test split, records sorted by class: test carved by test_fraction (seeded, stratified).
    order = np.argsort(train_y, kind="stable")
    with h5py.File(path("sorted.h5"), "w") as file:
        file["images"], file["labels"] = train_x[order], train_y[order]
    layouts["no_test_split"] = {
        "train": {"images": path("sorted.h5") + ":/images", "labels": path("sorted.h5") + ":/labels"},
        "test_fraction": 0.2, "split_seed": 4}
    return layouts


class MappedSourceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.layouts = build_layouts()

    def train(self, name, data, ranks=1, max_steps=30, extra=None, args=(), expect=0):
        config = e2e.base_config(NATIVE, name=name, seed=11, batch_size=20, max_steps=max_steps)
        config["model"] = {"layers": LAYERS}
        config["data"] = dict(data)
        if extra:
            for key, value in extra.items():
                config[key].update(value)
        config_path = e2e.write_config(path(name + ".yaml"), config)
        run_dir = path("run-" + name)
        result = e2e.mpirun(ranks, "train", config_path, "--run-dir", run_dir, *args, timeout=300)
        self.assertEqual(result.returncode, expect, result.describe())
        return result, run_dir

    def weights(self, run_dir):
        return e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]

    def assert_bitwise(self, run_dir, reference_dir, what):
        mine, reference = self.weights(run_dir), self.weights(reference_dir)
        self.assertEqual(sorted(mine), sorted(reference))
        for name in mine:
            self.assertTrue(np.array_equal(mine[name].view(np.uint32), reference[name].view(np.uint32)),
                            f"{what}: /model/{name} differs from the native run")

    def native_run(self, name="native", ranks=1, data_extra=None, max_steps=30):
        data = {"path": os.path.abspath(NATIVE)}
        data.update(data_extra or {})
        if not os.path.exists(path(f"run-{name}/summary.json")):
            self.train(name, data, ranks=ranks, max_steps=max_steps)
        return path("run-" + name)

    def test_five_layouts_train_bitwise_like_the_native_import(self):
        native = self.native_run()
        for layout in ("separate_files", "one_file", "nchw_float", "one_hot", "labels_n1111"):
            with self.subTest(layout=layout):
                result, run_dir = self.train("mapped-" + layout, {"source": self.layouts[layout]})
                self.assertIn("data.source: train", result.stdout)
                self.assert_bitwise(run_dir, native, layout)
                summary = e2e.read_summary(run_dir)
                self.assertEqual(summary["test_accuracy"], e2e.read_summary(native)["test_accuracy"])
                # summary.json names what was trained on: the mapped training images' FILE:DATASET.
                self.assertEqual(summary["dataset"], self.layouts[layout]["train"]["images"] + " (data.source)")
                self.assertTrue(os.path.isfile(os.path.join(run_dir, "source_statistics.txt")))
        self.assertIn("scaled by 255", self.train("mapped-nchw-log", {"source": self.layouts["nchw_float"]},
                                                  max_steps=1)[0].stdout)

    def test_no_test_split_is_carved_stratified_and_trains_like_its_import(self):
        source = self.layouts["no_test_split"]
        config_path = e2e.write_config(path("carve-source.yaml"), {"data": {"source": source}})
        imported = path("carved-import.h5")
        result = e2e.phalanx("data", "import-hdf5", config_path, "-o", imported, "--chunk", 256, timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(imported, "r") as file:
            train_labels, test_labels = file["/train/labels"][...], file["/test/labels"][...]
            self.assertEqual(file["/train/images"].chunks[0], 256)
        self.assertEqual(len(train_labels) + len(test_labels), TRAIN)
        whole = np.bincount(ARRAYS["/train/labels"], minlength=10)
        # Stratified: each class gives round(0.2 x its count) to test.
        self.assertTrue(np.array_equal(np.bincount(test_labels, minlength=10), np.round(0.2 * whole).astype(int)))
        mapped_result, mapped_dir = self.train("carved-mapped", {"source": source})
        self.assertIn("carved from train by class", mapped_result.stdout)
        _, native_dir = self.train("carved-native", {"path": imported})
        self.assert_bitwise(mapped_dir, native_dir, "carved test split")

    def test_streaming_node_cache_and_augmentation_match_native(self):
        # Same chunking (1024 samples along N) on both sides, so streaming walks the same order.
        augment = {"random_crop_padding": 2, "horizontal_flip": True}
        for cache, ranks, layout in (("none", 1, "nchw_float"), ("node", 2, "one_file")):
            with self.subTest(cache=cache):
                extra = {"cache": cache, "augment": augment, "stream_window_mb": 1}
                native = self.native_run(f"native-{cache}", ranks=ranks, data_extra=extra)
                data = {"source": self.layouts[layout]}
                data.update(extra)
                result, run_dir = self.train(f"mapped-{cache}", data, ranks=ranks)
                self.assertIn(f"data cache: {cache}", result.stdout)
                self.assert_bitwise(run_dir, native, f"data.cache {cache}")

    def test_resume_continues_exactly_and_reuses_the_statistics(self):
        data = {"source": self.layouts["one_hot"]}
        _, straight = self.train("resume-straight", data, max_steps=40)
        _, halted = self.train("resume-halted", data, max_steps=20)
        sidecar = os.path.join(halted, "source_statistics.txt")
        written = os.stat(sidecar).st_mtime_ns
        config_path = path("resume-halted.yaml")
        result = e2e.mpirun(1, "train", config_path, "--run-dir", halted, "--resume", "auto",
                            "--set", "train.max_steps=40", timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(os.stat(sidecar).st_mtime_ns, written, "the sidecar was recomputed")
        self.assert_bitwise(halted, straight, "resumed run")

    def test_eval_and_predict_without_data_use_the_mapped_source(self):
        _, run_dir = self.train("eval-mapped", {"source": self.layouts["nchw_float"]}, max_steps=20)
        checkpoint = os.path.join(run_dir, "checkpoints", "latest.h5")
        mapped = e2e.mpirun(2, "eval", "--checkpoint", checkpoint, "--device", "cpu", timeout=300)
        self.assertEqual(mapped.returncode, 0, mapped.describe())
        native = e2e.mpirun(2, "eval", "--checkpoint", checkpoint, "--data", NATIVE, "--device", "cpu",
                            timeout=300)
        self.assertEqual(native.returncode, 0, native.describe())
        # Same weights, same test images and labels, same mean/std: the same accuracy and loss.
        figures = lambda text: re.search(r"accuracy (\S+)\s+loss (\S+)", text).groups()
        self.assertEqual(figures(mapped.stdout), figures(native.stdout), mapped.stdout + native.stdout)
        self.assertIn(f"test split of {path('nchw.h5')}:/test/images (data.source)", mapped.stdout)
        # Without the run directory's sidecar the statistics are computed again, to the same bits.
        os.remove(os.path.join(run_dir, "source_statistics.txt"))
        output = path("mapped-predictions.h5")
        predicted = e2e.phalanx("predict", "--checkpoint", checkpoint, "--device", "cpu", "--output", output)
        self.assertEqual(predicted.returncode, 0, predicted.describe())
        self.assertFalse(os.path.exists(os.path.join(run_dir, "source_statistics.txt")),
                         "predict wrote into the run directory")
        expected = figures(native.stdout)[0]
        self.assertIn(f"(accuracy {expected})", predicted.stdout)

    def test_a_refused_run_leaves_no_folder_behind(self):
        # The statistics are computed before the batch is checked against the split: the refusal
        # must still leave nothing, not a folder holding only the sidecar.
        result, run_dir = self.train("refused-batch", {"source": self.layouts["one_file"]},
                                     extra={"train": {"batch_size": 2000}}, max_steps=1, expect=2)
        self.assertIn("fewer than one global batch", result.stderr)
        self.assertFalse(os.path.exists(run_dir), sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else "")

    def test_statistics_path_of_the_config_is_used(self):
        source = dict(self.layouts["separate_files"])
        source["statistics"] = path("shared-stats.txt")
        self.train("stats-path", {"source": source}, max_steps=2)
        with open(path("shared-stats.txt")) as stream:
            text = stream.read()
        self.assertTrue(text.startswith("phalanx-source-statistics 1\n"), text)
        self.assertIn("\nmean 0x", text)
        # A file changed since (here only its modification time) no longer matches the fingerprint:
        # the statistics are computed again and the sidecar rewritten.
        images = path("x_train.h5")
        stat = os.stat(images)
        os.utime(images, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        self.train("stats-path-again", {"source": source}, max_steps=2)
        with open(path("shared-stats.txt")) as stream:
            again = stream.read()
        self.assertNotEqual(again.splitlines()[1], text.splitlines()[1], "the fingerprint did not change")
        self.assertEqual(again.splitlines()[2:], text.splitlines()[2:], "same bytes, same statistics")
        # A sidecar whose statistics no pixels in [0, 1] could have (edited, damaged: a negative
        # deviation, a value cut short, not a number) is not taken: it is computed again, to the
        # same bits, where it used to train silently on the wrong normalisation or fail mid-run.
        for index, broken in enumerate(("std -0x1p-2", "std 0x1.6", "std nan", "std garbage")):
            lines = again.splitlines()
            lines[3] = broken
            with open(path("shared-stats.txt"), "w") as stream:
                stream.write("\n".join(lines) + "\n")
            self.train(f"stats-path-broken-{index}", {"source": source}, max_steps=2)
            with open(path("shared-stats.txt")) as stream:
                self.assertEqual(stream.read(), again, f"a sidecar with '{broken}' was taken")

    def test_inspect_prints_the_tree_and_a_block_that_trains_as_pasted(self):
        result = e2e.phalanx("data", "inspect", path("all.h5"))
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertRegex(result.stdout, r"(?m)^\s+/X_train\s+uint8\s+\[1200,28,28,1\]\s+chunks \[1024,28,28,1\]\s+uncompressed")
        self.assertRegex(result.stdout, r"(?m)^\s+/list_classes\s+string")
        self.assertIn("data:\n  source:\n", result.stdout)
        block = result.stdout[result.stdout.index("data:\n  source:\n"):]
        self.assertIn(f"train: {{images: {path('all.h5')}:/X_train, labels: {path('all.h5')}:/y_train}}", block)
        self.assertIn(f"classes: {path('all.h5')}:/list_classes", block)
        config = e2e.base_config(NATIVE, name="pasted", batch_size=20, max_steps=2)
        config["model"] = {"layers": LAYERS}
        del config["data"]
        config_path = path("pasted.yaml")
        with open(config_path, "w") as stream:
            stream.write(e2e.to_yaml(config) + "\n" + block)
        trained = e2e.mpirun(1, "train", config_path, "--run-dir", path("run-pasted"), timeout=300)
        self.assertEqual(trained.returncode, 0, trained.describe())
        # The tree of the NCHW file shows its compression; a native file still gets its summary.
        nchw = e2e.phalanx("data", "inspect", path("nchw.h5"))
        self.assertRegex(nchw.stdout, r"(?m)^\s+/train/images\s+float32\s+\[1200,1,28,28\]\s+chunks \[1024,1,28,28\]\s+gzip 1")
        self.assertIn("layout: nchw", nchw.stdout)
        native = e2e.phalanx("data", "inspect", NATIVE)
        self.assertIn("classes (10)", native.stdout)
        # Images and labels in separate files: named together, they pair by split and sample count.
        files = [path(name) for name in ("y_test.h5", "x_train.h5", "x_test.h5", "y_train.h5")]
        separate = e2e.phalanx("data", "inspect", *files)
        self.assertEqual(separate.returncode, 0, separate.describe())
        for split in ("train", "test"):
            self.assertIn(f"{split}: {{images: {path(f'x_{split}.h5')}:/x, labels: {path(f'y_{split}.h5')}:/y}}",
                          separate.stdout)
        alone = e2e.phalanx("data", "inspect", path("x_train.h5"))
        self.assertIn("name both files", alone.stdout)

    def test_bad_inputs_exit_2_naming_file_dataset_and_key(self):
        bad = path("bad.h5")
        train_x, train_y = ARRAYS["/train/images"], ARRAYS["/train/labels"]
        with h5py.File(bad, "w") as file:
            file["x"], file["y"] = train_x, train_y
            file["y_short"] = train_y[:-1]
            wrong = train_y.copy()
            wrong[7] = 12
            file["y_wrong"] = wrong
            rows = one_hot(train_y)
            rows[3, 0] = rows[3, 1] = 1.0
            rows[3, train_y[3]] = 1.0
            file["y_two_hot"] = rows
            file["x_ambiguous"] = np.ones((TRAIN, 3, 9, 3), dtype=np.uint8)
            floats = train_x.astype(np.float32) / 255.0
            floats[0, 0, 0, 0] = -0.5
            file["x_negative"] = floats
            file["x_int"] = train_x.astype(np.int32)
            file["names"] = np.array([b"a", b"b"], dtype="S")
        x, y = bad + ":/x", bad + ":/y"
        cases = [
            ({"images": path("absent.h5") + ":/x", "labels": y}, {}, [path("absent.h5"), "data.source.train.images", "no such file"]),
            ({"images": bad + ":/nope", "labels": y}, {}, [bad + ":/nope", "data.source.train.images", "no such dataset"]),
            ({"images": x, "labels": bad + ":/y_short"}, {}, [bad + ":/y_short", "data.source.train.labels", f"{TRAIN - 1} labels"]),
            ({"images": x, "labels": bad + ":/y_wrong"}, {"classes": ARRAYS["classes"]}, [bad + ":/y_wrong", "data.source.train.labels", "label 7 = 12 is outside [0, 10)"]),
            ({"images": x, "labels": bad + ":/y_two_hot"}, {}, [bad + ":/y_two_hot", "data.source.train.labels", "row 3 is not one-hot"]),
            ({"images": bad + ":/x_ambiguous", "labels": y}, {}, [bad + ":/x_ambiguous", "data.source.train.images", "ambiguous"]),
            ({"images": bad + ":/x_negative", "labels": y}, {}, [bad + ":/x_negative", "data.source.train.images", "-0.5", "outside both [0, 1] and [0, 255]"]),
            ({"images": bad + ":/x_int", "labels": y}, {}, [bad + ":/x_int", "data.source.train.images", "int32 cannot be images"]),
            ({"images": x, "labels": y}, {"classes": bad + ":/names"}, [bad + ":/y", "data.source.train.labels", "outside [0, 2)"]),
        ]
        for index, (train, extra, fragments) in enumerate(cases):
            with self.subTest(case=fragments[-1]):
                source = {"train": train, "test_fraction": 0.1}
                source.update(extra)
                result, run_dir = self.train(f"bad-{index}", {"source": source}, max_steps=1, expect=2)
                for fragment in fragments:
                    self.assertIn(fragment, result.stderr)
                self.assertFalse(os.path.exists(run_dir), "a refused run left its folder")
                self.assertNotIn("Traceback", result.stderr)


if __name__ == "__main__":
    e2e.main()
