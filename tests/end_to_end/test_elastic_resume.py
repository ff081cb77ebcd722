"""End-to-end: a checkpoint written on N ranks resumes on M ranks and continues the N-rank run
(docs/CHECKPOINTS.md, "Elastic resume"). For 4->2, 2->3, 1->4 and 3->1, a straight N-rank run of
LeNet-5 (no batch norm, no dropout) on a Fashion-MNIST subset is set against the same run resumed
on M ranks from its mid-epoch, mid-log-interval checkpoint: the same global batch (cut unevenly
where M does not divide it), the same steps, the same position, epoch boundary crossed, weights
and momentum equal within float-summation tolerance, the reported losses too.

Why a tolerance and which one: on M ranks every update sums the same per-sample gradients of the
same weights, but grouped differently (rank r sums its local slice, then the all-reduce sums the
ranks), and float addition is not associative. One fp32 sum of n terms moves by at most about
n * 2^-24 of the sum of their magnitudes; here n <= 50 samples, so a step's gradient differs by
a few 1e-6 relative, and 10 further SGD steps carry that into the weights at the same order.
The test allows max |difference| <= 1e-4 of the tensor's largest magnitude (about 30x what that
argument gives) and checks that the weights moved by far more than that over the resumed steps, so
a repeated or skipped batch, a wrong schedule position or lost momentum would fail it."""

import math
import os
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

TRAIN, TEST = 600, 200
EPOCHS, TOTAL_STEPS, EVERY_STEPS, LOG_EVERY = 2, 16, 6, 4  # 12 steps per epoch at a global batch of 48 or 50
SEED = 5
RELATIVE_TOLERANCE = 1e-4
# (checkpoint ranks, their train.batch_size, resumed ranks, the local batches expected there and
# their micro-batches: a local batch above train.batch_size is trained in pieces within it)
CASES = ((4, 12, 2, [24, 24], [2, 2]),
         (2, 25, 3, [17, 17, 16], [1, 1, 1]),
         (1, 50, 4, [13, 13, 12, 12], [1, 1, 1, 1]),
         (3, 16, 1, [48], [3]))


def setUpModule():
    global WORK, DATA
    e2e.require_fashion()
    WORK = e2e.work_dir("elastic_resume")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)


def write_config(name, batch_size, **data):
    config = e2e.base_config(
        DATA, name=name, seed=SEED, epochs=EPOCHS, batch_size=batch_size, max_steps=TOTAL_STEPS,
        preset="lenet5", every_steps=EVERY_STEPS, keep=10, log_every_steps=LOG_EVERY,
        optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
        schedule={"type": "cosine", "warmup_epochs": 0.5})
    config["data"].update(data)
    return e2e.write_config(os.path.join(WORK, name + ".yaml"), config)


def latest(run_dir):
    return os.path.join(run_dir, "checkpoints", "latest.h5")


def step_checkpoint(run_dir, step):
    return os.path.join(run_dir, "checkpoints", f"step-{step}.h5")


def events(run_dir, kind):
    return [event for event in e2e.read_metrics(run_dir) if event["event"] == kind]


class ElasticResumeTest(unittest.TestCase):
    def straight_run(self, ranks, batch_size):
        config = write_config(f"straight-{ranks}", batch_size)
        run_dir = os.path.join(WORK, f"straight-{ranks}")
        if not os.path.exists(os.path.join(run_dir, "summary.json")):
            result = e2e.mpirun(ranks, "train", config, "--run-dir", run_dir, timeout=300)
            self.assertEqual(result.returncode, 0, result.describe())
        return config, run_dir

    def assert_close(self, expected, actual, name):
        self.assertEqual(expected.shape, actual.shape, name)
        scale = max(float(np.abs(expected).max()), 1e-12)
        difference = float(np.abs(expected.astype(np.float64) - actual).max())
        self.assertLessEqual(difference, RELATIVE_TOLERANCE * scale,
                             f"{name}: max |difference| {difference:.3g} of largest magnitude {scale:.3g}")
        return difference / scale

    def check_case(self, ranks, batch_size, resumed_ranks, expected_split, expected_micro_batches):
        config, straight = self.straight_run(ranks, batch_size)
        checkpoint = step_checkpoint(straight, EVERY_STEPS)
        run_dir = os.path.join(WORK, f"resumed-{ranks}-to-{resumed_ranks}")
        result = e2e.mpirun(resumed_ranks, "train", config, "--run-dir", run_dir, "--resume", checkpoint,
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn(f"elastic resume: the checkpoint's {ranks} ranks' global batch of {ranks * batch_size} "
                      f"continues on {resumed_ranks} ranks", result.stdout)

        summary, straight_summary = e2e.read_summary(run_dir), e2e.read_summary(straight)
        self.assertEqual(summary["world_size"], resumed_ranks)
        self.assertEqual(summary["global_batch"], ranks * batch_size)
        self.assertEqual(summary["batch_split"]["local_batches"], expected_split)
        self.assertEqual(summary["batch_split"]["checkpoint_local_batches"], [batch_size] * ranks)
        self.assertEqual(summary["steps"], TOTAL_STEPS)
        self.assertEqual([rank["micro_batches"] for rank in summary["ranks"]], expected_micro_batches)
        self.assertEqual([rank["local_batch"] for rank in summary["ranks"]], expected_split)

        # The position continues: same step, epoch, step in epoch and samples as the straight run.
        with h5py.File(latest(straight), "r") as expected_file, h5py.File(latest(run_dir), "r") as actual_file:
            for name in ("global_step", "epoch", "step_in_epoch", "samples_seen"):
                self.assertEqual(int(expected_file["state"][name][()]), int(actual_file["state"][name][()]), name)
            self.assertEqual(int(actual_file.attrs["world_size"]), resumed_ranks)
            self.assertEqual(int(actual_file.attrs["global_batch"]), ranks * batch_size)
            self.assertEqual(list(actual_file.attrs["local_batches"]), expected_split)
            self.assertEqual(len(actual_file["state"]["epoch_loss_sum"]), resumed_ranks)

        expected = e2e.read_checkpoint_arrays(latest(straight))
        actual = e2e.read_checkpoint_arrays(latest(run_dir))
        at_resume = e2e.read_checkpoint_arrays(checkpoint)
        worst = 0.0
        for group in ("model", "optimizer"):
            self.assertEqual(sorted(expected[group]), sorted(actual[group]), group)
            for name, value in expected[group].items():
                worst = max(worst, self.assert_close(value, actual[group][name], f"/{group}/{name}"))
        # The tolerance can tell: the resumed steps moved every weight tensor by far more.
        for name, value in expected["model"].items():
            moved = float(np.abs(value.astype(np.float64) - at_resume["model"][name]).max())
            self.assertGreater(moved, 100 * RELATIVE_TOLERANCE * float(np.abs(value).max()), name)

        # No step trained twice or skipped: the step events are the straight run's, with its losses
        # (the first one after the resume adds up the merged sums of the checkpoint's ranks).
        straight_steps = {event["step"]: event for event in events(straight, "step")}
        steps = {event["step"]: event for event in events(run_dir, "step") if event["step"] > EVERY_STEPS}
        self.assertEqual(sorted(steps), [step for step in sorted(straight_steps) if step > EVERY_STEPS])
        for step, event in steps.items():
            self.assertAlmostEqual(event["loss"], straight_steps[step]["loss"], delta=1e-4 * straight_steps[step]["loss"])
            self.assertAlmostEqual(event["learning_rate"], straight_steps[step]["learning_rate"],
                                   delta=1e-9 * straight_steps[step]["learning_rate"])
        # Epoch 1 (steps 1-12) was half trained before the resume: its train_loss merges both parts.
        (epoch,) = events(run_dir, "epoch")
        (straight_epoch, *_) = events(straight, "epoch")
        self.assertEqual(epoch["epoch"], 1)
        self.assertAlmostEqual(epoch["train_loss"], straight_epoch["train_loss"], delta=1e-5 * straight_epoch["train_loss"])
        self.assertAlmostEqual(summary["test_loss"], straight_summary["test_loss"], delta=1e-4 * straight_summary["test_loss"])
        print(f"{ranks}->{resumed_ranks}: largest relative difference {worst:.2e}")

    def test_4_to_2(self):
        self.check_case(*CASES[0])

    def test_2_to_3(self):
        self.check_case(*CASES[1])

    def test_1_to_4(self):
        self.check_case(*CASES[2])

    def test_3_to_1(self):
        self.check_case(*CASES[3])

    def test_another_global_batch_with_the_learning_rate_rule(self):
        # elastic.global_batch: change at an epoch's end: global batch 50 -> 100 (6 steps per epoch
        # instead of 12), the peak rate x2 (linear); the run goes on at the same place of the
        # schedule (step 6 of 12 in the new steps) and counts updates on from 12 to max_steps 16.
        config, straight = self.straight_run(*CASES[1][:2])
        checkpoint = step_checkpoint(straight, 12)
        run_dir = os.path.join(WORK, "changed-global-batch")
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume", checkpoint,
                            "--set", "train.batch_size=50", "--set", "elastic.global_batch=change",
                            "--set", "elastic.learning_rate_rule=linear", "--set", "train.log_every_steps=1",
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn("elastic resume: global batch 50 on 2 ranks -> 100 on 2 ranks (elastic.global_batch: change), "
                      "learning rate 0.05 -> 0.1 (elastic.learning_rate_rule: linear)", result.stdout)
        summary = e2e.read_summary(run_dir)
        self.assertEqual(summary["elastic"]["learning_rate_rule"], "linear")
        self.assertAlmostEqual(summary["elastic"]["learning_rate"], 0.1, delta=1e-15)
        self.assertEqual(summary["global_batch"], 100)
        self.assertEqual(summary["steps"], TOTAL_STEPS)
        with h5py.File(latest(run_dir), "r") as file:
            self.assertEqual(int(file.attrs["global_batch"]), 100)
            self.assertAlmostEqual(float(file.attrs["learning_rate"]), 0.1, delta=1e-15)
            state = {name: int(file["state"][name][()]) for name in ("global_step", "epoch", "step_in_epoch",
                                                                     "samples_seen")}
        self.assertEqual(state, {"global_step": 16, "epoch": 1, "step_in_epoch": 4, "samples_seen": 12 * 50 + 4 * 100})
        # Cosine over 2 epochs of 6 steps, past the warm-up: update 12 + k is schedule step 6 + k - 1.
        for event in events(run_dir, "step"):
            schedule_step = 6 + event["step"] - 12 - 1
            expected = 0.1 * 0.5 * (1 + math.cos(math.pi * schedule_step / 12))
            self.assertAlmostEqual(event["learning_rate"], expected, delta=1e-12, msg=event)
        self.assertEqual([event["step"] for event in events(run_dir, "step")], [13, 14, 15, 16])

    def test_another_global_batch_is_refused_without_the_key_or_off_a_batch_boundary(self):
        config, straight = self.straight_run(*CASES[1][:2])
        checkpoint = step_checkpoint(straight, EVERY_STEPS)  # 300 samples into epoch 1
        for label, extra, parts in (
                ("keep", [], ["train.batch_size", "elastic.global_batch: change"]),
                ("boundary", ["--set", "elastic.global_batch=change"],
                 ["300 samples into epoch 1", "global batches of 80", "epoch's end"])):
            run_dir = os.path.join(WORK, f"refused-{label}")
            batch = 50 if label == "keep" else 40
            result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume", checkpoint,
                                "--set", f"train.batch_size={batch}", *extra, timeout=120)
            self.assertEqual(result.returncode, 2, result.describe())
            (line,) = result.error_lines()
            for part in [checkpoint, *parts]:
                self.assertIn(part, line)
            self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")

    def test_a_streamed_run_is_refused_on_other_ranks(self):
        # Streaming cuts the epoch's chunk order into one part per rank: another split reorders it.
        config = write_config("streamed", 24, cache="none")
        first = os.path.join(WORK, "streamed")
        result = e2e.mpirun(2, "train", config, "--run-dir", first, "--set", f"train.max_steps={EVERY_STEPS}",
                            timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        checkpoint = step_checkpoint(first, EVERY_STEPS)
        run_dir = os.path.join(WORK, "streamed-on-1")
        result = e2e.mpirun(1, "train", config, "--run-dir", run_dir, "--resume", checkpoint, timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        (line,) = result.error_lines()
        for part in (checkpoint, "written by 2 ranks", "resumed on 1 ranks", "data.cache"):
            self.assertIn(part, line)
        self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")

    def test_the_data_order_must_continue_mid_epoch(self):
        # data.cache: auto may stream the split on nodes with less memory: the checkpoint stores its
        # order, and a resume mid-epoch in another order is refused; at an epoch's end it may
        # change, and a change of data.cache that keeps the order (rank to node) is no change.
        config = write_config("order-streamed", 24, cache="none")
        first = os.path.join(WORK, "order-streamed")
        steps_per_epoch = TRAIN // 48
        result = e2e.mpirun(2, "train", config, "--run-dir", first, "--set", f"train.max_steps={steps_per_epoch}",
                            "--set", f"checkpoint.every_steps={steps_per_epoch // 2}", timeout=300)
        self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(step_checkpoint(first, steps_per_epoch // 2), "r") as stored:
            self.assertTrue(e2e.attr_text(stored.attrs["data_order"]).startswith("chunk windows ("))
        mid_epoch = step_checkpoint(first, steps_per_epoch // 2)
        run_dir = os.path.join(WORK, "order-permuted-mid-epoch")
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume", mid_epoch,
                            "--set", "data.cache=rank", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        (line,) = result.error_lines()
        for part in (mid_epoch, f"step {steps_per_epoch // 2} of epoch 1", "'chunk windows (",
                     "order 'permutation'", "data.cache: rank as configured", "at an epoch's end"):
            self.assertIn(part, line)
        self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")

        run_dir = os.path.join(WORK, "order-permuted-at-epoch-end")
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume",
                            step_checkpoint(first, steps_per_epoch), "--set", "data.cache=rank",
                            "--set", f"train.max_steps={steps_per_epoch + 2}", timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        with h5py.File(latest(run_dir), "r") as stored:
            self.assertEqual(e2e.attr_text(stored.attrs["data_order"]), "permutation")
            self.assertEqual(int(stored["state/global_step"][()]), steps_per_epoch + 2)

        permuted_mid_epoch = latest(run_dir)  # step 2 of epoch 2, in the permutation
        run_dir = os.path.join(WORK, "order-per-node-mid-epoch")
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume", permuted_mid_epoch,
                            "--set", "data.cache=node", "--set", f"train.max_steps={steps_per_epoch + 4}",
                            timeout=120)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertEqual(e2e.read_summary(run_dir)["steps"], steps_per_epoch + 4)

    def test_local_batches_that_do_not_keep_the_global_batch_are_refused(self):
        config, straight = self.straight_run(*CASES[0][:2])
        checkpoint = step_checkpoint(straight, EVERY_STEPS)
        run_dir = os.path.join(WORK, "wrong-split")
        result = e2e.mpirun(2, "train", config, "--run-dir", run_dir, "--resume", checkpoint,
                            "--set", "distributed.local_batches=[24, 20]", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        (line,) = result.error_lines()
        for part in (checkpoint, "written by 4 ranks", "global batch 48", "resumed on 2 ranks",
                     "distributed.local_batches", "adds up to 44"):
            self.assertIn(part, line)
        self.assertFalse(os.path.exists(run_dir), "a refused resume must not create its run directory")


if __name__ == "__main__":
    e2e.main()
