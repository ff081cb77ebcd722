"""End-to-end: the central property of data parallelism (docs/DESIGN.md §6) through the real trainer.
`mpirun -np 2` with train.batch_size B and `-np 4` with B/2 end with the same weights as one rank
with 2B after the same number of steps: the global batch, the data order (ShardPlan) and the
averaged gradient are the same; only the float summation order of the gradient differs."""

import os
import unittest

import numpy as np

import e2e_common as e2e

GLOBAL_BATCH, STEPS = 64, 16
TRAIN, TEST = 2048, 256
# Summation order moves weights by ~1e-7 of their tensor's scale per step; after 16 momentum
# steps the largest difference measured was 4.0e-6 (2 ranks) and 5.5e-6 (4 ranks). 1e-4 leaves a
# 20x margin, while a mis-scaled update moves weights by ~0.6 of their scale (checked below).
TOLERANCE = 1e-4


def setUpModule():
    global WORK, DATA
    e2e.require_fashion()
    WORK = e2e.work_dir("data_parallel")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)


def train(ranks, name, learning_rate=0.05, clip_grad_norm=None):
    config = e2e.base_config(DATA, name=name, seed=3, batch_size=GLOBAL_BATCH // ranks, max_steps=STEPS,
                             optimizer={"type": "sgd", "learning_rate": learning_rate, "momentum": 0.9},
                             schedule={"type": "constant"}, log_every_steps=4)
    if clip_grad_norm is not None:
        config["train"]["clip_grad_norm"] = clip_grad_norm
    path = e2e.write_config(os.path.join(WORK, name + ".yaml"), config)
    run_dir = os.path.join(WORK, name)
    result = e2e.mpirun(ranks, "train", path, "--run-dir", run_dir, timeout=300)
    if result.returncode != 0:
        raise AssertionError(result.describe())
    return e2e.read_checkpoint_arrays(os.path.join(run_dir, "checkpoints", "latest.h5"), ("model",))["model"]


def step_gradient_norms(name):
    return [event["grad_norm"] for event in e2e.read_metrics(os.path.join(WORK, name)) if event["event"] == "step"]


def worst_relative_difference(first, second):
    worst = 0.0
    for name, value in first.items():
        if value.dtype != np.float32:
            continue
        scale = max(float(np.abs(second[name]).max()), 1e-12)
        worst = max(worst, float(np.abs(value.astype(np.float64) - second[name]).max()) / scale)
    return worst


class DataParallelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.one_rank = train(1, "ranks1")

    def test_two_ranks_equal_one_rank_with_the_global_batch(self):
        two_ranks = train(2, "ranks2")
        self.assertLess(worst_relative_difference(two_ranks, self.one_rank), TOLERANCE)

    def test_four_ranks_equal_one_rank_with_the_global_batch(self):
        four_ranks = train(4, "ranks4")
        self.assertLess(worst_relative_difference(four_ranks, self.one_rank), TOLERANCE)

    def test_the_comparison_sees_a_different_update(self):
        # Guard: a 10% different learning rate (as a mis-scaled gradient would give) is far
        # outside the tolerance, so the two tests above can fail.
        other = train(1, "ranks1-other-rate", learning_rate=0.055)
        self.assertGreater(worst_relative_difference(other, self.one_rank), 100 * TOLERANCE)

    def test_clipped_two_ranks_equal_one_rank(self):
        # train.clip_grad_norm: every rank clips the summed gradients by their norm, computed
        # locally; 0.2 is below this model's gradient norms here, so the clip acts on every step.
        one_rank = train(1, "clipped-ranks1", clip_grad_norm=0.2)
        two_ranks = train(2, "clipped-ranks2", clip_grad_norm=0.2)
        self.assertLess(worst_relative_difference(two_ranks, one_rank), TOLERANCE)
        self.assertGreater(worst_relative_difference(one_rank, self.one_rank), 100 * TOLERANCE,
                           "clipping did not change the trajectory")
        one_norms, two_norms = step_gradient_norms("clipped-ranks1"), step_gradient_norms("clipped-ranks2")
        self.assertEqual(len(one_norms), STEPS // 4)
        for one, two in zip(one_norms, two_norms):
            self.assertGreater(one["max"], 0.2)
            self.assertGreaterEqual(one["max"], one["mean"])
            self.assertAlmostEqual(one["mean"], two["mean"], delta=1e-4 * one["mean"])
        # Without clipping, step events carry no grad_norm.
        self.assertTrue(all("grad_norm" not in event for event in e2e.read_metrics(os.path.join(WORK, "ranks1"))))


if __name__ == "__main__":
    e2e.main()
