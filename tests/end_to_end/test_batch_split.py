"""End-to-end: heterogeneous data-parallel (docs/DESIGN.md §3) through the real binary. Two CPU ranks of
unequal speed (MPMD: rank 0 with 2 OpenMP threads, rank 1 with 1) train with
distributed.batch_split: throughput: the split is logged once, is what the measured rates give
(largest remainder, recomputed here), adds up to train.batch_size x 2, is in summary.json and in
every checkpoint; `--resume` reuses the stored split without measuring again and ends bitwise equal
to an uninterrupted run with that split given as distributed.local_batches. Bad splits exit 2
with one message naming the key or the checkpoint, and write nothing."""

import math
import os
import re
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

BATCH, TRAIN, TEST = 24, 960, 200
GLOBAL = 2 * BATCH
STEPS = 12
SPLIT_LINE = re.compile(r"^batch split: rank 0 cpu (\d+) \((\d+) img/s\), rank 1 cpu (\d+) \((\d+) img/s\)$",
                        re.MULTILINE)


def setUpModule():
    global WORK, DATA, CONFIG_PATH
    e2e.require_fashion()
    WORK = e2e.work_dir("batch_split")
    DATA = e2e.make_fashion_subset(WORK, TRAIN, TEST)
    config = e2e.base_config(DATA, name="split", seed=5, batch_size=BATCH, max_steps=STEPS, every_steps=STEPS // 2,
                             keep=5, log_every_steps=4,
                             optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9})
    config["distributed"] = {"batch_split": "throughput"}
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "split.yaml"), config)


def unequal_ranks(*args, timeout=300):
    """Rank 0 with 2 OpenMP threads, rank 1 with 1 (`env` sets each rank's OMP_NUM_THREADS after
    mpirun's own -x)."""
    return e2e.mpirun_per_rank([(1, ["env", f"OMP_NUM_THREADS={threads}", e2e.PHALANX, "train", *args])
                                for threads in (2, 1)], timeout=timeout)


def largest_remainder(total, rates):
    shares = [total * rate / sum(rates) for rate in rates]
    split = [math.floor(share) for share in shares]
    order = sorted(range(len(rates)), key=lambda rank: -(shares[rank] - split[rank]))
    for rank in order[:total - sum(split)]:
        split[rank] += 1
    for rank in range(len(split)):
        if split[rank] < 1:
            split[rank] += 1
            split[split.index(max(split))] -= 1
    return split


class BatchSplitTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.run_dir = os.path.join(WORK, "measured")
        cls.result = unequal_ranks(CONFIG_PATH, "--run-dir", cls.run_dir, "--set", f"train.max_steps={STEPS // 2}")

    def measured_split(self):
        self.assertEqual(self.result.returncode, 0, self.result.describe())
        return e2e.read_summary(self.run_dir)["batch_split"]

    def test_split_follows_the_measured_rates(self):
        split = self.measured_split()
        self.assertEqual(split["method"], "throughput")
        self.assertEqual(split["global_batch"], GLOBAL)
        self.assertEqual(sum(split["local_batches"]), GLOBAL)
        self.assertTrue(all(batch >= 1 for batch in split["local_batches"]), split)
        self.assertEqual(split["devices"], ["cpu", "cpu"])
        rates = split["images_per_sec"]
        self.assertTrue(all(rate > 0 for rate in rates), split)
        self.assertEqual(split["local_batches"], largest_remainder(GLOBAL, rates))
        self.assertGreater(split["probe_seconds"], 0.0)
        lines = SPLIT_LINE.findall(self.result.stdout)
        self.assertEqual(len(lines), 1, "the split is logged once, by rank 0\n" + self.result.describe())
        batch0, rate0, batch1, rate1 = map(int, lines[0])
        self.assertEqual([batch0, batch1], split["local_batches"])
        self.assertEqual([rate0, rate1], [round(rate) for rate in rates])
        print(f"\n    split {split['local_batches']} from {[round(rate) for rate in rates]} img/s, "
              f"probe {split['probe_seconds']:.2f} s", end=" ")
        summary = e2e.read_summary(self.run_dir)
        self.assertEqual(summary["global_batch"], GLOBAL)
        # Each rank's throughput is its own local batch over its step time.
        self.assertEqual([entry["rank"] for entry in summary["ranks"]], [0, 1])

    def test_checkpoint_stores_the_split(self):
        split = self.measured_split()
        for name in (f"step-{STEPS // 2}.h5", "latest.h5"):
            with h5py.File(os.path.join(self.run_dir, "checkpoints", name), "r") as file:
                self.assertEqual(list(file.attrs["local_batches"]), split["local_batches"], name)

    def test_resume_reuses_the_split_bitwise(self):
        split = self.measured_split()["local_batches"]
        # An uninterrupted run with the measured split given explicitly...
        straight = os.path.join(WORK, "straight")
        result = unequal_ranks(CONFIG_PATH, "--run-dir", straight, "--set",
                               f"distributed.local_batches=[{split[0]}, {split[1]}]")
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn(f"batch split: rank 0 cpu {split[0]}, rank 1 cpu {split[1]}\n", result.stdout)
        # Step events weigh every rank's samples: their 3 intervals of 4 steps cover the whole run
        # (12 steps within the first epoch), so their mean is the run's train loss over all samples.
        losses = [event["loss"] for event in e2e.read_metrics(straight) if event["event"] == "step"]
        self.assertEqual(len(losses), STEPS // 4)
        self.assertAlmostEqual(sum(losses) / len(losses), e2e.read_summary(straight)["train_loss"], places=6)
        # ...and the measured run resumed from its middle checkpoint, measuring nothing.
        resumed = os.path.join(WORK, "resumed")
        checkpoint = os.path.join(self.run_dir, "checkpoints", f"step-{STEPS // 2}.h5")
        result = unequal_ranks(CONFIG_PATH, "--run-dir", resumed, "--resume", checkpoint)
        self.assertEqual(result.returncode, 0, result.describe())
        self.assertIn(f"(as stored in {checkpoint})", result.stdout)
        summary = e2e.read_summary(resumed)
        self.assertEqual(summary["batch_split"]["local_batches"], split)
        self.assertEqual(summary["batch_split"]["stored_in"], checkpoint)
        self.assertNotIn("images_per_sec", summary["batch_split"], "a resumed run must not measure again")
        self.assertEqual(summary["steps"], STEPS)
        expected = e2e.read_checkpoint_arrays(os.path.join(straight, "checkpoints", "latest.h5"))
        actual = e2e.read_checkpoint_arrays(os.path.join(resumed, "checkpoints", "latest.h5"))
        for group in ("model", "optimizer"):
            self.assertEqual(sorted(expected[group]), sorted(actual[group]))
            for name, value in expected[group].items():
                self.assertTrue(np.array_equal(value.view(np.uint32), actual[group][name].view(np.uint32)),
                                f"/{group}/{name} differs after resuming with the stored split")

    # ----- bad splits: exit 2, one message, nothing written ---------------------------------------

    def check_refused(self, result, run_dir, *culprits):
        self.assertEqual(result.returncode, 2, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        for culprit in culprits:
            self.assertIn(culprit, lines[0], result.describe())
        print(f"\n    {lines[0]}", end=" ")
        self.assertFalse(os.path.exists(os.path.join(run_dir, "summary.json")))
        self.assertFalse(os.path.exists(os.path.join(run_dir, "checkpoints")))

    def test_local_batches_of_the_wrong_length(self):
        run_dir = os.path.join(WORK, "wrong-length")
        result = e2e.mpirun(2, "train", CONFIG_PATH, "--run-dir", run_dir,
                            "--set", "distributed.local_batches=[20, 20, 8]")
        self.check_refused(result, run_dir, "distributed.local_batches has 3 entries", "2 ranks")

    def test_local_batch_of_zero(self):
        run_dir = os.path.join(WORK, "zero")
        result = e2e.mpirun(2, "train", CONFIG_PATH, "--run-dir", run_dir,
                            "--set", "distributed.local_batches=[48, 0]")
        self.check_refused(result, run_dir, "distributed.local_batches[1] must be >= 1 (got 0)")

    def test_resume_with_another_explicit_split(self):
        split = self.measured_split()["local_batches"]
        other = [split[0] + 1, split[1] - 1] if split[1] > 1 else [split[0] - 1, split[1] + 1]
        run_dir = os.path.join(WORK, "other-split")
        checkpoint = os.path.join(self.run_dir, "checkpoints", f"step-{STEPS // 2}.h5")
        result = e2e.mpirun(2, "train", CONFIG_PATH, "--run-dir", run_dir, "--resume", checkpoint,
                            "--set", f"distributed.local_batches=[{other[0]}, {other[1]}]")
        self.check_refused(result, run_dir, checkpoint, f"trained with local batches [{split[0]}, {split[1]}]",
                           "distributed.local_batches")

    def test_resume_with_another_world_size_measures_again_and_keeps_the_global_batch(self):
        # An elastic resume (docs/CHECKPOINTS.md): the stored split does not fit 3 ranks, so the
        # ranks measure their throughput again and cut the checkpoint's global batch by it.
        stored = self.measured_split()["local_batches"]
        run_dir = os.path.join(WORK, "three-ranks")
        checkpoint = os.path.join(self.run_dir, "checkpoints", f"step-{STEPS // 2}.h5")
        result = e2e.mpirun(3, "train", CONFIG_PATH, "--run-dir", run_dir, "--resume", checkpoint)
        self.assertEqual(result.returncode, 0, result.describe())
        split = e2e.read_summary(run_dir)["batch_split"]
        self.assertEqual(split["method"], "throughput")
        self.assertEqual(split["global_batch"], GLOBAL)
        self.assertEqual(len(split["local_batches"]), 3)
        self.assertEqual(split["local_batches"], largest_remainder(GLOBAL, split["images_per_sec"]))
        self.assertEqual(split["checkpoint_local_batches"], stored)
        self.assertEqual(e2e.read_summary(run_dir)["steps"], STEPS)


if __name__ == "__main__":
    e2e.main()
