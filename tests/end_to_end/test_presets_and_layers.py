"""End-to-end: short runs of the other model presets and of an explicit layer list: lenet5 on the
Fashion-MNIST subset (2 ranks), resnet20 on synthetic 16x16x3 data with 4 ranks
(oversubscribed, with data.augment on), resnet18 on synthetic 32x32x3 data, and a custom list with a residual block, batch_norm,
dropout and avg_pool.
Each exits 0, writes summary.json with finite losses, and a checkpoint with the model's
parameters in PyTorch layouts."""

import math
import os
import re
import unittest

import numpy as np

import e2e_common as e2e

STEPS = 20

# Layers inside the residual block are left unnamed: phalanx names them after the block.
CUSTOM_LAYERS = [
    {"type": "conv", "name": "stem", "out_channels": 8, "kernel": 3, "padding": 1, "bias": False},
    {"type": "batch_norm", "name": "stem_bn"},
    {"type": "relu"},
    {"type": "residual", "name": "block", "relu_after": True,
     "main": [{"type": "conv", "out_channels": 16, "kernel": 3, "stride": 2, "padding": 1, "bias": False},
              {"type": "batch_norm"},
              {"type": "relu"},
              {"type": "conv", "out_channels": 16, "kernel": 3, "padding": 1, "bias": False},
              {"type": "batch_norm"}],
     "shortcut": [{"type": "conv", "out_channels": 16, "kernel": 1, "stride": 2, "bias": False},
                  {"type": "batch_norm"}]},
    {"type": "avg_pool", "name": "pool", "kernel": 2},
    {"type": "dropout", "name": "drop", "probability": 0.2},
    {"type": "flatten"},
    {"type": "linear", "name": "fc", "out_features": 10},
]


def setUpModule():
    global WORK
    WORK = e2e.work_dir("presets_and_layers")


class PresetsAndLayersTest(unittest.TestCase):
    def train(self, name, data, ranks, model, batch_size=32, augment=None, **config_changes):
        config = e2e.base_config(data, name=name, batch_size=batch_size, max_steps=STEPS, log_every_steps=5)
        config["model"] = model
        if augment:
            config["data"]["augment"] = augment
        config["optimizer"] = {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9}
        config["schedule"] = {"type": "constant"}
        config.update(config_changes)
        path = e2e.write_config(os.path.join(WORK, name + ".yaml"), config)
        run_dir = os.path.join(WORK, name)
        result = e2e.mpirun(ranks, "train", path, "--run-dir", run_dir, timeout=300)
        print(f"\n{name}: {ranks} ranks, {STEPS} steps in {result.seconds:.1f} s")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(result.error_lines(), [], result.describe())
        summary = e2e.read_summary(run_dir)
        for key in ("test_loss", "train_loss", "test_accuracy"):
            self.assertTrue(e2e.finite(summary.get(key)), f"{key}: {summary.get(key)!r}")
        self.assertGreater(summary["test_loss"], 0.0)
        self.assertTrue(0.0 <= summary["test_accuracy"] <= 1.0)
        self.assertEqual(summary["steps"], STEPS)
        self.assertEqual(summary["world_size"], ranks)
        self.assertEqual(summary["global_batch"], ranks * batch_size)
        self.assertEqual(len(summary["ranks"]), ranks)
        losses = [event["loss"] for event in e2e.read_metrics(run_dir) if event["event"] == "step"]
        self.assertEqual(len(losses), STEPS // 5)
        self.assertTrue(all(math.isfinite(loss) for loss in losses), losses)
        arrays = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]
        for key, value in arrays.items():
            self.assertTrue(np.isfinite(value).all(), key)
        return summary, losses, arrays

    def test_lenet5_on_fashion(self):
        data = e2e.make_fashion_subset(WORK, 2000, 500)
        summary, losses, arrays = self.train("lenet5", data, 2, {"preset": "lenet5"})
        shapes = {key: value.shape for key, value in arrays.items()}
        self.assertEqual(shapes, {
            "conv1/weight": (6, 1, 5, 5), "conv1/bias": (6,), "conv2/weight": (16, 6, 5, 5), "conv2/bias": (16,),
            "fc1/weight": (120, 400), "fc1/bias": (120,), "fc2/weight": (84, 120), "fc2/bias": (84,),
            "fc3/weight": (10, 84), "fc3/bias": (10,)})
        # 20 steps of SGD on real data already beat a uniform guess (loss ln 10 = 2.30)
        self.assertLess(summary["test_loss"], math.log(10))
        self.assertGreater(summary["test_accuracy"], 0.2)

    def test_resnet20_on_synthetic_rgb_with_4_ranks(self):
        data = e2e.make_synth(os.path.join(WORK, "synth-16x16x3.h5"), train=1024, test=128, height=16, width=16,
                              channels=3, classes=10)
        # CIFAR-style training augmentation in the loader threads of all 4 ranks.
        augment = {"random_crop_padding": 2, "horizontal_flip": True, "cutout": 4}
        summary, losses, arrays = self.train("resnet20", data, 4, {"preset": "resnet20"}, batch_size=8,
                                             augment=augment)
        with open(os.path.join(WORK, "resnet20", "config.yaml")) as stream:
            resolved = stream.read()
        for line in ("random_crop_padding: 2", "horizontal_flip: true", "cutout: 4"):
            self.assertIn(line, resolved)
        self.assertEqual(arrays["conv1/weight"].shape, (16, 3, 3, 3))
        self.assertEqual(arrays["bn1/running_var"].shape, (16,))
        self.assertEqual(arrays["layer2/0/shortcut/0/weight"].shape, (32, 16, 1, 1))
        self.assertEqual(arrays["layer3/2/conv2/weight"].shape, (64, 64, 3, 3))
        self.assertEqual(arrays["fc/weight"].shape, (10, 64))
        conv_weights = [key for key in arrays if key.endswith("weight") and arrays[key].ndim == 4]
        self.assertEqual(len(conv_weights), 1 + 18 + 2, "resnet20: stem, 9 blocks x 2 convs, 2 projections")
        self.assertEqual(len(summary["ranks"]), 4)

    def test_resnet18_on_synthetic_rgb(self):
        data = e2e.make_synth(os.path.join(WORK, "synth-32x32x3.h5"), train=256, test=64, height=32, width=32,
                              channels=3, classes=10)
        summary, losses, arrays = self.train("resnet18", data, 1, {"preset": "resnet18"}, batch_size=4)
        # torchvision's resnet18 names and layouts, so the checkpoint loads into it.
        self.assertEqual(arrays["conv1/weight"].shape, (64, 3, 7, 7))
        self.assertEqual(arrays["layer2/0/downsample/0/weight"].shape, (128, 64, 1, 1))
        self.assertEqual(arrays["layer4/1/conv2/weight"].shape, (512, 512, 3, 3))
        self.assertEqual(arrays["fc/weight"].shape, (10, 512))
        conv_weights = [key for key in arrays if key.endswith("weight") and arrays[key].ndim == 4]
        self.assertEqual(len(conv_weights), 1 + 16 + 3, "resnet18: stem, 8 blocks x 2 convs, 3 projections")

    def test_mobile_presets_with_stochastic_depth_on_2_ranks(self):
        data = e2e.make_synth(os.path.join(WORK, "synth-32x32x3.h5"), train=256, test=64, height=32, width=32,
                              channels=3, classes=10)
        # torchvision's names and layouts: squeeze-and-excitation under block/K, EfficientNet's stages
        # as features/S/B, the classifier behind its dropout.
        expected = {
            "efficientnet_b0": {"features/0/0/weight": (32, 3, 3, 3), "features/2/1/block/2/fc1/weight": (6, 144, 1, 1),
                                "features/7/0/block/3/0/weight": (320, 1152, 1, 1), "classifier/1/weight": (10, 1280)},
            "mobilenet_v3_small": {"features/1/block/1/fc2/bias": (16,), "features/4/block/0/1/running_var": (96,),
                                   "classifier/0/weight": (1024, 576), "classifier/3/weight": (10, 1024)},
        }
        for preset, shapes in expected.items():
            summary, losses, arrays = self.train(
                preset, data, 2, {"preset": preset}, batch_size=4,
                optimizer={"type": "sgd", "learning_rate": 0.01, "momentum": 0.9})
            for key, shape in shapes.items():
                self.assertEqual(arrays[key].shape, shape, f"{preset}: {key}")

    def test_custom_layers_with_residual_batch_norm_dropout_avg_pool(self):
        data = e2e.make_synth(os.path.join(WORK, "synth-12x12x3.h5"), train=1024, test=128, height=12, width=12,
                              channels=3, classes=10)
        summary, losses, arrays = self.train("custom", data, 2, {"layers": CUSTOM_LAYERS}, batch_size=16)
        self.assertEqual(arrays["stem/weight"].shape, (8, 3, 3, 3))
        self.assertNotIn("stem/bias", arrays, "bias: false means no bias parameter")
        # 12x12 -> block (stride 2) 6x6x16 -> avg_pool 3x3x16 -> 144 features
        self.assertEqual(arrays["fc/weight"].shape, (10, 144))
        conv_shapes = sorted(value.shape for key, value in arrays.items() if value.ndim == 4)
        self.assertEqual(conv_shapes, sorted([(8, 3, 3, 3), (16, 8, 3, 3), (16, 16, 3, 3), (16, 8, 1, 1)]))
        block = sorted(key for key in arrays if key.startswith("block/"))
        self.assertEqual(len([key for key in block if key.endswith("weight") and arrays[key].ndim == 4]), 3, block)
        running_vars = [key for key in arrays if key.endswith("running_var")]
        self.assertEqual(len(running_vars), 4, "stem_bn and the block's three batch_norm layers")
        for key in running_vars:
            layer = key[:-len("running_var")]
            for param in ("weight", "bias", "running_mean"):
                self.assertIn(layer + param, arrays)
            self.assertTrue((arrays[key] > 0).all(), key)
        self.assertIn("stem_bn/running_mean", arrays)


class ExampleConfigsTest(unittest.TestCase):
    """docs/DESIGN.md §5: every config in configs/ is run by a test. Each runs 10 steps with 2 ranks on the
    CPU, its data.path replaced by a small dataset of the kind it names: a Fashion-MNIST subset, or
    synthetic data made as the `phalanx data synth` command in the config's comments says."""

    STEPS = 10

    def stand_in_data(self, name, text, data_path):
        if "fashion" in data_path or "mnist" in data_path:
            return e2e.make_fashion_subset(WORK, 2000, 500)
        command = re.search(r"phalanx data synth\b.*", text)
        if "synth" in data_path and command:
            def option(flag, default):
                found = re.search(rf"--{flag}[ =](\d+)", command.group(0))
                return int(found.group(1)) if found else default
            shape = dict(height=option("height", 28), width=option("width", 28), channels=option("channels", 1),
                         classes=option("classes", 10))
            path = os.path.join(WORK, "example-synth-{height}x{width}x{channels}-{classes}.h5".format(**shape))
            return path if os.path.exists(path) else e2e.make_synth(path, train=2048, test=128, **shape)
        self.fail(f"configs/{name}: no small stand-in known for data.path {data_path!r}; name a Fashion-MNIST "
                  "file, or give the `phalanx data synth` command in a comment, or teach this test")

    def test_every_example_config_runs(self):
        if e2e.yaml is None:
            self.skipTest("PyYAML is not installed (Debian: python3-yaml): cannot read the example configs")
        folder = os.path.join(e2e.SOURCE_DIR, "configs")
        names = sorted(name for name in os.listdir(folder) if name.endswith((".yaml", ".yml")))
        self.assertTrue(names, f"no example configs in {folder}")
        for name in names:
            with self.subTest(config=name):
                with open(os.path.join(folder, name)) as stream:
                    text = stream.read()
                data_path = str(e2e.yaml.safe_load(text).get("data", {}).get("path", ""))
                data = self.stand_in_data(name, text, data_path)
                run_dir = os.path.join(WORK, "example-" + name)
                result = e2e.mpirun(2, "train", os.path.join(folder, name), "--run-dir", run_dir,
                                    "--set", f"data.path={data}", "--set", f"train.max_steps={self.STEPS}",
                                    "--set", "device=cpu", "--set", "checkpoint.every_steps=0", timeout=300)
                print(f"\nconfigs/{name}: {self.STEPS} steps in {result.seconds:.1f} s", end=" ")
                self.assertEqual(result.returncode, 0, result.describe())
                summary = e2e.read_summary(run_dir)
                self.assertEqual(summary["steps"], self.STEPS)
                self.assertTrue(e2e.finite(summary["test_loss"]) and e2e.finite(summary["train_loss"]), summary)

if __name__ == "__main__":
    e2e.main()
