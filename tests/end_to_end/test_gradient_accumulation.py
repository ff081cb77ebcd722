"""End-to-end: gradient accumulation (train.accumulation_steps). Each rank trains its local batch
as several micro-batches, and the step still makes one all-reduce and one update at the global
batch: two ranks of LeNet-5 (no batch norm, no dropout) with 3 and with 5 (uneven: 5, 5, 5, 5, 4)
micro-batches of a local batch of 24 end where the run without accumulation ends, within the
float-summation tolerance of test_elastic_resume (1e-4 of each tensor's largest magnitude: the
per-sample gradients are the same, only summed in other groups), with the same steps and losses.
A resume on fewer ranks turns it on by itself (train.accumulation_steps: auto), which
test_elastic_resume checks."""

import os
import unittest

import numpy as np

import e2e_common as e2e

TRAIN, TEST = 600, 200
RANKS, BATCH, STEPS = 2, 24, 10
RELATIVE_TOLERANCE = 1e-4


def setUpModule():
    global WORK, CONFIG
    e2e.require_fashion()
    WORK = e2e.work_dir("gradient_accumulation")
    data = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    config = e2e.base_config(
        data, name="accumulation", seed=9, epochs=2, batch_size=BATCH, max_steps=STEPS, preset="lenet5",
        log_every_steps=5, optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9},
        schedule={"type": "cosine", "warmup_epochs": 0.5})
    CONFIG = e2e.write_config(os.path.join(WORK, "accumulation.yaml"), config)


def latest(run_dir):
    return os.path.join(run_dir, "checkpoints", "latest.h5")


class GradientAccumulationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = os.path.join(WORK, "plain")
        cls.plain_result = e2e.mpirun(RANKS, "train", CONFIG, "--run-dir", cls.plain, timeout=300)

    def check(self, steps, expected_sizes):
        self.assertEqual(self.plain_result.returncode, 0, self.plain_result.describe())
        run_dir = os.path.join(WORK, f"accumulated-{steps}")
        result = e2e.mpirun(RANKS, "train", CONFIG, "--run-dir", run_dir, "--set", f"train.accumulation_steps={steps}",
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn(f"gradient accumulation: micro-batches per rank [{steps}, {steps}], one all-reduce and update "
                      f"per step (train.accumulation_steps: {steps}", result.stdout)
        summary, plain_summary = e2e.read_summary(run_dir), e2e.read_summary(self.plain)
        self.assertEqual([rank["micro_batches"] for rank in summary["ranks"]], [steps] * RANKS)
        self.assertEqual([rank["micro_batches"] for rank in plain_summary["ranks"]], [1] * RANKS)
        self.assertEqual(summary["steps"], STEPS)
        self.assertEqual(summary["global_batch"], RANKS * BATCH)
        self.assertEqual(len(expected_sizes), steps)

        expected = e2e.read_checkpoint_arrays(latest(self.plain))
        actual = e2e.read_checkpoint_arrays(latest(run_dir))
        worst = 0.0
        for group in ("model", "optimizer"):
            self.assertEqual(sorted(expected[group]), sorted(actual[group]), group)
            for name, value in expected[group].items():
                scale = max(float(np.abs(value).max()), 1e-12)
                difference = float(np.abs(value.astype(np.float64) - actual[group][name]).max())
                self.assertLessEqual(difference, RELATIVE_TOLERANCE * scale, f"/{group}/{name}: {difference:.3g}")
                worst = max(worst, difference / scale)
        steps_logged = {event["step"]: event for event in e2e.read_metrics(self.plain) if event["event"] == "step"}
        for event in e2e.read_metrics(run_dir):
            if event["event"] == "step":
                reference = steps_logged.pop(event["step"])
                self.assertAlmostEqual(event["loss"], reference["loss"], delta=1e-4 * reference["loss"])
                self.assertEqual(event["learning_rate"], reference["learning_rate"])
        self.assertEqual(steps_logged, {}, "steps missing from the accumulated run")
        self.assertAlmostEqual(summary["test_loss"], plain_summary["test_loss"], delta=1e-4 * plain_summary["test_loss"])
        print(f"{steps} micro-batches {expected_sizes}: largest relative difference {worst:.2e}")

    def test_three_micro_batches(self):
        self.check(3, [8, 8, 8])

    def test_five_uneven_micro_batches(self):
        self.check(5, [5, 5, 5, 5, 4])


if __name__ == "__main__":
    e2e.main()
