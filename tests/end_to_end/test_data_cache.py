"""End-to-end: the training split's cache modes (data.cache, docs/DATA.md) through the real binary.
- A split larger than data.max_cache_gb is streamed (auto picks `none`, and says so) and trains:
  the loss falls and the test accuracy is far above chance on learnable synthetic data.
- A label out of range met while filling the node cache or while streaming: exit 2, naming it.
- `node` (one shared copy per node) with 4 ranks gives bitwise the weights of `rank` mode.
- The image-folder importer: a tree of PNG and JPEG files made here round-trips (pixels equal
  for images already at the stored size, close to Pillow's resize otherwise); a corrupt image
  fails with exit 2 naming the file, and leaves no output file behind; the file is the same
  whatever the decoding thread count over many slabs, and of two bad files the one first in the
  stored order is named; CMYK JPEGs come out as Pillow's convert("RGB") gives them."""

import io
import os
import shutil
import unittest

import h5py
import numpy as np

import e2e_common as e2e

try:
    from PIL import Image
except ImportError:  # python3-pil
    Image = None


def setUpModule():
    global WORK
    WORK = e2e.work_dir("data_cache")


def synth_chunked(path, train, test, size, chunk):
    result = e2e.phalanx("data", "synth", "-o", path, "--train", train, "--test", test, "--height", size,
                         "--width", size, "--channels", 3, "--classes", 4, "--seed", 5, "--chunk", chunk,
                         timeout=120)
    if result.returncode != 0:
        raise AssertionError("data synth failed\n" + result.describe())
    return path


LAYERS = [
    {"type": "conv", "name": "conv1", "out_channels": 8, "kernel": 3, "padding": 1},
    {"type": "relu"},
    {"type": "max_pool", "kernel": 2},
    {"type": "flatten"},
    {"type": "linear", "name": "fc", "out_features": 4},
]


class CacheModesTest(unittest.TestCase):
    def train(self, name, data_path, ranks, data_settings, epochs=1, max_steps=None, batch_size=16):
        config = e2e.base_config(data_path, name=name, seed=7, epochs=epochs, batch_size=batch_size,
                                 max_steps=max_steps)
        config["model"] = {"layers": LAYERS}
        config["data"].update(data_settings)
        path = e2e.write_config(os.path.join(WORK, name + ".yaml"), config)
        run_dir = os.path.join(WORK, name)
        result = e2e.mpirun(ranks, "train", path, "--run-dir", run_dir, timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        return result, run_dir

    def test_a_split_larger_than_the_budget_is_streamed_and_trains(self):
        # 4096 x 3x16x16 = 3.1 MB of images against a budget of 1 MB: auto must stream.
        data = synth_chunked(os.path.join(WORK, "stream.h5"), 4096, 512, 16, 128)
        result, run_dir = self.train("stream", data, 2, {"max_cache_gb": 0.001, "stream_window_mb": 1},
                                     epochs=2)
        self.assertIn("auto chose none", result.stdout)
        self.assertIn("streaming 128-sample chunks", result.stdout)
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["steps"], 2 * (4096 // 32))
        losses = [event["loss"] for event in e2e.read_metrics(run_dir) if event.get("event") == "step"]
        self.assertGreater(len(losses), 4)
        self.assertLess(np.mean(losses[-3:]), 0.5 * np.mean(losses[:3]), f"loss did not fall: {losses}")
        self.assertGreater(summary["test_accuracy"], 0.8, "4 classes: chance is 0.25")

    def test_node_cache_trains_bitwise_like_rank_cache(self):
        data = synth_chunked(os.path.join(WORK, "node.h5"), 2048, 128, 12, 100)
        node_result, node_dir = self.train("node", data, 4, {"cache": "node"}, max_steps=24, batch_size=8)
        self.assertIn("data cache: node (one", node_result.stdout)
        self.assertIn("shared by 4 ranks", node_result.stdout)
        _, rank_dir = self.train("rank", data, 4, {"cache": "rank"}, max_steps=24, batch_size=8)
        node = e2e.read_checkpoint_arrays(os.path.join(node_dir, "checkpoints", "latest.h5"))["model"]
        rank = e2e.read_checkpoint_arrays(os.path.join(rank_dir, "checkpoints", "latest.h5"))["model"]
        self.assertEqual(sorted(node), sorted(rank))
        for name in node:
            self.assertTrue(np.array_equal(node[name].view(np.uint32), rank[name].view(np.uint32)),
                            f"/model/{name} differs between node and rank cache")

    def test_label_out_of_range_found_while_filling_or_streaming_exits_2_naming_it(self):
        data = synth_chunked(os.path.join(WORK, "badlabel.h5"), 1024, 64, 8, 64)
        with h5py.File(data, "r+") as file:
            file["/train/labels"][1000] = 9  # 4 classes; sample 1000 lies in the last rank's share
        for cache in ("node", "none"):
            config = e2e.base_config(data, name="badlabel-" + cache, batch_size=16)
            config["model"] = {"layers": LAYERS}
            config["data"]["cache"] = cache
            path = e2e.write_config(os.path.join(WORK, f"badlabel-{cache}.yaml"), config)
            result = e2e.mpirun(2, "train", path, "--run-dir", os.path.join(WORK, "badlabel-" + cache),
                                timeout=120)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertIn("/train/labels[1000] = 9 is outside [0, 4)", result.stderr, cache)

    def test_bad_cache_value_names_the_key(self):
        data = synth_chunked(os.path.join(WORK, "small.h5"), 256, 64, 8, 64)
        config = e2e.base_config(data, name="badcache")
        config["data"]["cache"] = "nodes"
        path = e2e.write_config(os.path.join(WORK, "badcache.yaml"), config)
        result = e2e.phalanx("train", path)
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn("data.cache", result.stderr)


@unittest.skipIf(Image is None, "needs python3-pil to make the PNG and JPEG files")
class ImageFolderTest(unittest.TestCase):
    def make_tree(self, root, corrupt=None):
        rng = np.random.default_rng(3)
        images = {}
        for label, name in enumerate(["cat", "dog", "eel"]):
            os.makedirs(os.path.join(root, name))
            for index in range(10):
                pixels = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
                file = os.path.join(root, name, f"{index:02d}.png")
                Image.fromarray(pixels).save(file)
                images[file] = (pixels, label)
            # one larger JPEG per class, resized on import
            big = np.full((40, 24, 3), 40 + 60 * label, dtype=np.uint8)
            Image.fromarray(big).save(os.path.join(root, name, "big.jpg"), quality=95)
        with open(os.path.join(root, "cat", "notes.txt"), "w") as stream:
            stream.write("not an image\n")
        if corrupt:
            with open(os.path.join(root, "dog", corrupt), "wb") as stream:
                stream.write(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
        return images

    def test_round_trip_of_a_folder_of_pngs_and_jpegs(self):
        root = os.path.join(WORK, "folder")
        images = self.make_tree(root)
        output = os.path.join(WORK, "folder.h5")
        result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "8x8", "--test-fraction",
                             "0.2", "--val-fraction", "0.25", "--seed", "4", "--chunk", "5")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("3 classes", result.stdout)
        self.assertIn("skipped 1 files", result.stdout)
        with h5py.File(output, "r") as file:
            self.assertEqual([e2e.attr_text(name) for name in file.attrs["classes"]], ["cat", "dog", "eel"])
            total = sum(file[f"/{split}/images"].shape[0] for split in ("train", "test", "val"))
            self.assertEqual(total, 33)
            self.assertEqual(file["/test/images"].shape[0], 6)  # round(0.2 * 11) = 2 per class
            self.assertEqual(file["/train/images"].chunks[0], 5)
            stored = {}
            for split in ("train", "test", "val"):
                for pixels, label in zip(file[f"/{split}/images"][...], file[f"/{split}/labels"][...]):
                    stored.setdefault(int(label), []).append(pixels)
        # Every 8x8 PNG is stored exactly once, bit for bit, under its class.
        for file, (pixels, label) in images.items():
            matches = [candidate for candidate in stored[label] if np.array_equal(candidate, pixels)]
            self.assertEqual(len(matches), 1, file)
        # The 40x24 JPEGs (flat colour) shrink to flat 8x8 images of the same colour (JPEG error only).
        for label in range(3):
            flats = [candidate for candidate in stored[label] if candidate.std() < 3]
            self.assertEqual(len(flats), 1, f"class {label}")
            self.assertLess(abs(float(flats[0].mean()) - (40 + 60 * label)), 3)
        # The same seed gives the same file; another seed another split.
        again = os.path.join(WORK, "folder-again.h5")
        self.assertEqual(e2e.phalanx("data", "import-images", root, "-o", again, "--size", "8x8",
                                     "--val-fraction", "0.25", "--seed", "4", "--chunk", "5").returncode, 0)
        with h5py.File(output, "r") as first, h5py.File(again, "r") as second:
            self.assertTrue(np.array_equal(first["/train/images"][...], second["/train/images"][...]))

    def assert_each_stored_image(self, output, classes, check):
        """Calls check(pixels, expected key) for every image of the train and test splits, its key
        being (split, class name)."""
        with h5py.File(output, "r") as file:
            for split in ("train", "test"):
                for pixels, label in zip(file[f"/{split}/images"][...], file[f"/{split}/labels"][...]):
                    check(pixels, (split, classes[int(label)]))

    def test_resize_matches_pillow(self):
        root = os.path.join(WORK, "resize")
        rng = np.random.default_rng(8)
        expected = {}
        for name in ("a", "b"):
            os.makedirs(os.path.join(root, "train", name))
            os.makedirs(os.path.join(root, "test", name))
            for split in ("train", "test"):
                pixels = rng.integers(0, 256, size=(37, 53, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(os.path.join(root, split, name, "x.png"))
                expected[(split, name)] = np.asarray(Image.fromarray(pixels).resize((16, 12), Image.BILINEAR))
        output = os.path.join(WORK, "resize.h5")
        result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "12x16")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assert_each_stored_image(output, "ab", lambda pixels, key: self.assertLessEqual(
            int(np.abs(pixels.astype(int) - expected[key].astype(int)).max()), 2, key))

    def test_thread_count_changes_nothing_over_many_slabs(self):
        # 700 images in chunks of 7: slabs of 259 (whole chunks, at least 256), so three slabs in
        # train; 1 and 3 threads must write the same datasets.
        root = os.path.join(WORK, "many")
        rng = np.random.default_rng(11)
        for label, name in enumerate(["a", "b"]):
            os.makedirs(os.path.join(root, name))
            for index in range(350):
                pixels = rng.integers(0, 256, size=(6, 6, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(os.path.join(root, name, f"{index:03d}.png"))
        outputs = []
        for threads in ("1", "3"):
            output = os.path.join(WORK, f"many-{threads}.h5")
            result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "6x6", "--chunk", "7",
                                 "--threads", threads)
            self.assertEqual(result.returncode, 0, result.describe())
            outputs.append(output)
        with h5py.File(outputs[0], "r") as one, h5py.File(outputs[1], "r") as three:
            self.assertEqual(one["/train/images"].shape[0], 560)
            for name in ("/train/images", "/train/labels", "/test/images", "/test/labels"):
                self.assertTrue(np.array_equal(one[name][...], three[name][...]), name)
                self.assertEqual(e2e.attr_text(one[name].attrs["checksum"]),
                                 e2e.attr_text(three[name].attrs["checksum"]), name)
            self.assertTrue(np.array_equal(one["/train/images"].attrs["mean"], three["/train/images"].attrs["mean"]))
            # Every image is stored once: the 700 files' pixels, as a multiset, are the file's.
            stored = np.concatenate([one["/train/images"][...], one["/test/images"][...]])
            self.assertEqual(len({image.tobytes() for image in stored}), 700)
        verify = e2e.phalanx("data", "inspect", outputs[1], "--verify")
        self.assertEqual(verify.returncode, 0, verify.describe())
        refused = e2e.phalanx("data", "import-images", root, "-o", os.path.join(WORK, "many-bad.h5"), "--threads", "-1")
        self.assertEqual(refused.returncode, 2, refused.describe())
        self.assertIn("--threads: Value -1 not in range 0 to 1024", refused.stderr)
        self.assertFalse(os.path.exists(os.path.join(WORK, "many-bad.h5")))

    def test_of_two_bad_files_the_first_in_the_stored_order_is_named(self):
        # Both bad files in train (explicit train/ and test/ trees), so they share a slab and the
        # threads race to them; the message must name the one the stored order puts first, every
        # time. Which one that is comes from a run with one thread.
        root = os.path.join(WORK, "two-bad")
        rng = np.random.default_rng(9)
        for split, count in (("train", 40), ("test", 4)):
            for name in ("cat", "eel"):
                os.makedirs(os.path.join(root, split, name))
                for index in range(count):
                    pixels = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
                    Image.fromarray(pixels).save(os.path.join(root, split, name, f"{index:02d}.png"))
        for name in ("cat", "eel"):
            with open(os.path.join(root, "train", name, "zz-broken.png"), "wb") as stream:
                stream.write(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
        messages = []
        for threads in ("1", "4", "4", "4", "2"):
            output = os.path.join(WORK, "two-bad.h5")
            result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "8x8", "--threads", threads)
            self.assertEqual(result.returncode, 2, result.describe())
            self.assertEqual(len(result.error_lines()), 1, result.stderr)
            self.assertIn("zz-broken.png: not a readable PNG", result.stderr)
            self.assertFalse(os.path.exists(output))
            messages.append(result.error_lines()[0])
        self.assertEqual(set(messages), {messages[0]}, messages)

    def test_cmyk_jpegs_decode_as_pillow_converts_them(self):
        # Pillow writes CMYK JPEGs as Photoshop does (inverted inks, Adobe marker); a PyTorch
        # pipeline reads them with convert("RGB"). Stored at their own size: no resize in between.
        root = os.path.join(WORK, "cmyk")
        rng = np.random.default_rng(5)
        expected = {}
        for name in ("a", "b"):
            for split in ("train", "test"):
                os.makedirs(os.path.join(root, split, name))
                inks = Image.frombytes("CMYK", (7, 5), rng.integers(0, 256, size=(5, 7, 4), dtype=np.uint8).tobytes())
                path = os.path.join(root, split, name, "print.jpg")
                inks.resize((28, 20), Image.BILINEAR).save(path, quality=90)
                expected[(split, name)] = np.asarray(Image.open(path).convert("RGB"))
        output = os.path.join(WORK, "cmyk.h5")
        result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "20x28")
        self.assertEqual(result.returncode, 0, result.describe())
        # Pillow and TurboJPEG share libjpeg's decoding; the conversion is Pillow's.
        self.assert_each_stored_image(output, "ab", lambda pixels, key: self.assertTrue(
            np.array_equal(pixels, expected[key]), key))

    def test_corrupt_image_fails_naming_the_file_and_writes_nothing(self):
        root = os.path.join(WORK, "corrupt")
        self.make_tree(root, corrupt="05-broken.png")
        output = os.path.join(WORK, "corrupt.h5")
        result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "8x8")
        self.assertEqual(result.returncode, 2, result.describe())
        self.assertIn(os.path.join("dog", "05-broken.png"), result.stderr)
        self.assertEqual(len(result.error_lines()), 1, result.stderr)
        self.assertFalse(os.path.exists(output))
        self.assertEqual([name for name in os.listdir(WORK) if name.startswith("corrupt.h5")], [])

    def test_a_class_folder_whose_name_is_not_utf8_is_named_and_nothing_written(self):
        # The folder's name becomes a class name, which summaries and predictions write as UTF-8.
        root = os.path.join(WORK, "latin1")
        self.make_tree(root)
        os.rename(os.path.join(root, "eel"), os.path.join(os.fsencode(root), b"\xe9el"))
        output = os.path.join(WORK, "latin1.h5")
        result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "8x8")
        self.assertEqual(result.returncode, 2, result.describe())
        (line,) = result.error_lines()
        self.assertIn("the folder's name (a class name) is not UTF-8 text (byte 0)", line)
        self.assertFalse(os.path.exists(output))

    def test_links_that_lead_nowhere_hidden_folders_and_sizes(self):
        # A link that loops or leads nowhere is refused naming it (skipped, an image would go missing
        # unsaid); a hidden folder's copies stay out; --size sides past int are refused, not wrapped.
        for name, make_link in (("loop", lambda root: os.symlink("loop", os.path.join(root, "loop"))),
                                ("self", lambda root: os.symlink("self.png", os.path.join(root, "dog", "self.png"))),
                                ("dangling", lambda root: os.symlink("gone.png", os.path.join(root, "eel", "d.png")))):
            with self.subTest(link=name):
                root = os.path.join(WORK, "links-" + name)
                self.make_tree(root)
                make_link(root)
                output = os.path.join(WORK, f"links-{name}.h5")
                result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "8x8")
                self.assertEqual(result.returncode, 2, result.describe())
                (line,) = result.error_lines()
                self.assertIn("cannot be read", line)
                self.assertFalse(os.path.exists(output))
        root = os.path.join(WORK, "hidden-folder")
        self.make_tree(root)
        os.makedirs(os.path.join(root, "cat", ".ipynb_checkpoints"))
        shutil.copy(os.path.join(root, "cat", "00.png"), os.path.join(root, "cat", ".ipynb_checkpoints", "00.png"))
        output = os.path.join(WORK, "hidden-folder.h5")
        result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", "8x8")
        self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(output, "r") as file:
            self.assertEqual(sum(file[f"/{split}/images"].shape[0] for split in ("train", "test", "val")
                                 if f"/{split}/images" in file), 33)
        for size in ("4294967300x4", "99999999999x4", "8x", "8x8x8", "0x8"):
            with self.subTest(size=size):
                output = os.path.join(WORK, "size.h5")
                result = e2e.phalanx("data", "import-images", root, "-o", output, "--size", size)
                self.assertEqual(result.returncode, 2, result.describe())
                self.assertIn(f"--size must be HxW with each side from 1 to 4096, e.g. 64x64 (got '{size}')",
                              result.error_lines()[0])
                self.assertFalse(os.path.exists(output))


if __name__ == "__main__":
    e2e.main()
