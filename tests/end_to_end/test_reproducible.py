"""End-to-end: CPU training is bitwise reproducible for a fixed seed and world size (docs/DESIGN.md §6):
two `mpirun -np 2` runs with the same seed give identical /model/* in checkpoints/latest.h5, and a
different seed gives different weights. Checked for the fmnist_cnn preset and for a layer list
with batch_norm (running statistics averaged over ranks) and dropout (seeded masks)."""

import os
import unittest

import numpy as np

import e2e_common as e2e

RANKS, BATCH, STEPS = 2, 32, 24
TRAIN, TEST = 2048, 256

CUSTOM_LAYERS = [
    {"type": "conv", "name": "conv1", "out_channels": 8, "kernel": 3, "padding": 1},
    {"type": "batch_norm", "name": "bn1"},
    {"type": "relu"},
    {"type": "max_pool", "kernel": 2},
    {"type": "dropout", "probability": 0.25},
    {"type": "flatten"},
    {"type": "linear", "name": "fc", "out_features": 10},
]


def setUpModule():
    global WORK, DATA
    e2e.require_fashion()
    WORK = e2e.work_dir("reproducible")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)


class ReproducibleTest(unittest.TestCase):
    def train(self, name, seed, model=None):
        config = e2e.base_config(DATA, name=name, seed=seed, batch_size=BATCH, max_steps=STEPS)
        if model is not None:
            config["model"] = model
        path = e2e.write_config(os.path.join(WORK, name + ".yaml"), config)
        run_dir = os.path.join(WORK, name)
        result = e2e.mpirun(RANKS, "train", path, "--run-dir", run_dir, timeout=240)
        self.assertEqual(result.returncode, 0, result.describe())
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["steps"], STEPS)
        self.assertEqual(summary["world_size"], RANKS)
        arrays = e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"))
        self.assertTrue(arrays["model"], "latest.h5 has no /model datasets")
        return arrays, summary

    def assert_bitwise_equal(self, first, second, group):
        self.assertEqual(sorted(first[group]), sorted(second[group]), group)
        for name in first[group]:
            a, b = first[group][name], second[group][name]
            self.assertEqual(a.dtype, b.dtype, name)
            self.assertEqual(a.shape, b.shape, name)
            # compare the bits: NaNs and -0.0 must match too (integer counters compare as they are)
            bits = (lambda array: array.view(np.uint32)) if a.dtype == np.float32 else (lambda array: array)
            self.assertTrue(np.array_equal(bits(np.atleast_1d(a)), bits(np.atleast_1d(b))),
                            f"/{group}/{name} differs between two runs with the same seed "
                            f"(max |diff| {np.nanmax(np.abs(a.astype(np.float64) - b)):.3g})")

    def check_seed(self, label, model=None):
        first, first_summary = self.train(f"{label}-seed5-a", 5, model)
        second, second_summary = self.train(f"{label}-seed5-b", 5, model)
        other, _ = self.train(f"{label}-seed6", 6, model)
        self.assert_bitwise_equal(first, second, "model")
        self.assert_bitwise_equal(first, second, "optimizer")
        self.assertEqual(first_summary["test_accuracy"], second_summary["test_accuracy"])
        self.assertEqual(first_summary["test_loss"], second_summary["test_loss"])
        self.assertEqual(first_summary["train_loss"], second_summary["train_loss"])
        differing = [name for name in first["model"]
                     if not np.array_equal(first["model"][name], other["model"][name])]
        weights = [name for name in first["model"] if name.endswith("weight")]
        self.assertEqual(sorted(set(weights) - set(differing)), [],
                         "a different seed should change every weight tensor")
        return first

    def test_fmnist_cnn_same_seed_same_bits(self):
        arrays = self.check_seed("fmnist_cnn")
        self.assertEqual(arrays["model"]["conv1/weight"].shape, (32, 1, 3, 3))

    def test_batch_norm_and_dropout_same_seed_same_bits(self):
        arrays = self.check_seed("bn-dropout", {"layers": CUSTOM_LAYERS})
        # BN running statistics are model buffers and are checkpointed (and so compared above)
        self.assertIn("bn1/running_mean", arrays["model"])
        self.assertIn("bn1/running_var", arrays["model"])
        self.assertGreater(np.abs(arrays["model"]["bn1/running_mean"]).max(), 0.0, "running_mean never updated")


if __name__ == "__main__":
    e2e.main()
