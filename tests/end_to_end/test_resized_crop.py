"""End-to-end: data.augment.random_resized_crop trains at the training size from larger stored
images. The synthetic dataset stores 32x32 images; the run trains on 24x24 random resized crops
(flip and random erasing after them) and evaluates on 32 -> 28 resized, 24 centre-cropped test
images. The model is built for 24x24 (the first linear layer's weights have 8 x 12 x 12 inputs),
`phalanx eval` and `predict` of its checkpoint take the same evaluation path and agree with the
run's own evaluation, and a run stopped after one epoch and resumed ends bit for bit where the
straight run ended."""

import os
import re
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

RANKS, BATCH, EPOCHS = 2, 16, 2
TRAIN, TEST = 256, 96
STEPS_PER_EPOCH = TRAIN // (RANKS * BATCH)  # 8
STORED, SIZE = 32, 24
LAYERS = [
    {"type": "conv", "name": "conv", "out_channels": 8, "kernel": 3, "padding": 1},
    {"type": "relu"},
    {"type": "max_pool", "kernel": 2, "stride": 2},
    {"type": "flatten"},
    {"type": "linear", "name": "fc", "out_features": 10},
]


def setUpModule():
    global WORK, DATA, CONFIG_PATH, STRAIGHT
    WORK = e2e.work_dir("resized_crop")
    DATA = e2e.make_synth(os.path.join(WORK, "synth-32.h5"), train=TRAIN, test=TEST, height=STORED,
                          width=STORED, channels=1)
    config = e2e.base_config(DATA, name="resized-crop", seed=7, epochs=EPOCHS, batch_size=BATCH,
                             every_steps=STEPS_PER_EPOCH, keep=4, log_every_steps=2,
                             optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9},
                             schedule={"type": "cosine", "warmup_epochs": 0.5})
    config["model"] = {"layers": LAYERS}
    config["data"]["augment"] = {
        "random_resized_crop": {"size": SIZE, "scale": [0.35, 1.0], "ratio": [0.75, 1.3333]},
        "horizontal_flip": True,
        "random_erasing": {"probability": 0.25},
    }
    config["data"]["eval_resize"] = 28
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "resized-crop.yaml"), config)
    STRAIGHT = os.path.join(WORK, "straight")
    result = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", STRAIGHT, timeout=300)
    if result.returncode != 0:
        raise AssertionError("the straight run failed\n" + result.describe())


def latest(run_dir):
    return os.path.join(run_dir, "checkpoints", "latest.h5")


class ResizedCropTest(unittest.TestCase):
    def test_the_model_is_built_for_the_training_size(self):
        summary = e2e.read_summary(STRAIGHT)
        self.assertEqual(summary["steps"], EPOCHS * STEPS_PER_EPOCH)
        self.assertTrue(0.0 <= summary["test_accuracy"] <= 1.0 and e2e.finite(summary["test_loss"]), summary)
        model = e2e.read_checkpoint_arrays(latest(STRAIGHT), ("model",))["model"]
        # conv (padding 1) keeps 24x24, the pool halves it: 8 channels x 12 x 12 into fc.
        self.assertEqual(model["fc/weight"].shape, (10, 8 * (SIZE // 2) * (SIZE // 2)))
        with open(os.path.join(STRAIGHT, "config.yaml")) as stream:
            written = stream.read()
        self.assertIn("random_resized_crop", written)
        self.assertIn("eval_resize: 28", written)
        losses = [event["loss"] for event in e2e.read_metrics(STRAIGHT) if event["event"] == "step"]
        self.assertTrue(losses and all(e2e.finite(loss) for loss in losses), losses)

    def test_eval_and_predict_of_the_checkpoint_resize_and_crop_as_training_did(self):
        summary = e2e.read_summary(STRAIGHT)
        evaluated = e2e.mpirun(RANKS, "eval", "--checkpoint", latest(STRAIGHT), "--data", DATA, timeout=120)
        self.assertEqual(evaluated.returncode, 0, evaluated.describe())
        match = re.search(r"accuracy (\d\.\d{4})\s+loss (\d+\.\d{4})", evaluated.stdout)
        self.assertIsNotNone(match, evaluated.describe())
        self.assertEqual(match.group(1), f"{summary['test_accuracy']:.4f}")
        self.assertEqual(match.group(2), f"{summary['test_loss']:.4f}")
        output = os.path.join(WORK, "predictions.h5")
        predicted = e2e.mpirun(RANKS, "predict", "--checkpoint", latest(STRAIGHT), "--data", DATA, "--output",
                               output, timeout=120)
        self.assertEqual(predicted.returncode, 0, predicted.describe())
        with h5py.File(output, "r") as file:
            predictions, labels = file["predictions"][...], file["labels"][...]
        self.assertEqual(predictions.shape, (TEST,))
        self.assertAlmostEqual(float(np.mean(predictions == labels)), summary["test_accuracy"], places=6)

    def test_a_resumed_run_ends_where_the_straight_run_ended(self):
        run_dir = os.path.join(WORK, "preempted")
        first = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", run_dir,
                           "--set", f"train.max_steps={STEPS_PER_EPOCH}", timeout=300)
        self.assertEqual(first.returncode, 0, first.describe())
        resumed = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", run_dir, "--resume", "auto", timeout=300)
        self.assertEqual(resumed.returncode, 0, resumed.describe())
        expected = e2e.read_checkpoint_arrays(latest(STRAIGHT))
        actual = e2e.read_checkpoint_arrays(latest(run_dir))
        for group in ("model", "optimizer"):
            self.assertEqual(sorted(expected[group]), sorted(actual[group]), group)
            for name, value in expected[group].items():
                self.assertTrue(np.array_equal(value.view(np.uint32), actual[group][name].view(np.uint32)),
                                f"/{group}/{name} differs after resuming")
        self.assertEqual(e2e.read_summary(run_dir)["test_accuracy"], e2e.read_summary(STRAIGHT)["test_accuracy"])


if __name__ == "__main__":
    e2e.main()
