"""End-to-end: dynamic loss scaling (train.loss_scale) through the real binary on 2 ranks.
Scales are powers of two, so without an overflow a scaled run gives bitwise the weights of an
unscaled one; an update whose summed gradients overflow is skipped (weights stay finite where the
unscaled run stops at its first non-finite step, train.nonfinite: stop) and the scale halves; the scaler's state lives in the checkpoint
and a resumed run continues it. Gradient compression (distributed.grad_dtype: bf16) belongs to NCCL
and automatic batch sizing to GPU memory: both are refused for CPU ranks."""

import os
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py

RANKS, BATCH = 2, 32
TRAIN, TEST = 1024, 128
STEPS = TRAIN // (RANKS * BATCH)  # 16 per epoch, one epoch


def setUpModule():
    global WORK, CONFIG_PATH
    WORK = e2e.work_dir("loss_scaling")
    data = e2e.make_synth(os.path.join(WORK, "synth.h5"), train=TRAIN, test=TEST, seed=5)
    config = e2e.base_config(data, name="scaling", seed=9, epochs=1, batch_size=BATCH, log_every_steps=1,
                             every_steps=STEPS // 2, keep=4)
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "scaling.yaml"), config)


def train(name, *overrides, resume=None):
    run_dir = os.path.join(WORK, name)
    args = ["train", CONFIG_PATH, "--run-dir", run_dir]
    if resume:
        args += ["--resume", resume]
    if overrides:
        args += ["--set", *overrides]
    result = e2e.mpirun(RANKS, *args, timeout=240)
    if result.returncode != 0:
        raise AssertionError(f"training '{name}' failed\n" + result.describe())
    return run_dir


def latest(run_dir):
    return os.path.join(run_dir, "checkpoints", "latest.h5")


def scaler_state(path):
    with h5py.File(path, "r") as file:
        state = file["state"]
        if "loss_scale_log2" not in state:
            return None
        return {name: int(state[f"loss_scale_{name}"][()]) for name in ("log2", "good_steps", "skipped_steps")}


class LossScalingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.unscaled = train("unscaled", "train.loss_scale=none")
        cls.scaled = train("scaled", "train.loss_scale=dynamic")

    def test_scaling_without_overflow_gives_the_unscaled_weights_bitwise(self):
        expected = e2e.read_checkpoint_arrays(latest(self.unscaled))
        actual = e2e.read_checkpoint_arrays(latest(self.scaled))
        self.assertTrue(expected["model"] and expected["optimizer"])
        for group in ("model", "optimizer"):
            self.assertEqual(sorted(expected[group]), sorted(actual[group]))
            for name, value in expected[group].items():
                if value.dtype == np.float32:
                    self.assertTrue(np.array_equal(value.view(np.uint32), actual[group][name].view(np.uint32)),
                                    f"/{group}/{name} differs with loss scaling")
        summary = e2e.read_summary(self.scaled)
        self.assertEqual(summary["loss_scaling"], {"final_scale": 65536.0, "skipped_steps": 0})
        self.assertNotIn("loss_scaling", e2e.read_summary(self.unscaled))
        self.assertEqual(scaler_state(latest(self.scaled)), {"log2": 16, "good_steps": STEPS, "skipped_steps": 0})
        self.assertIsNone(scaler_state(latest(self.unscaled)))
        steps = [event for event in e2e.read_metrics(self.scaled) if event["event"] == "step"]
        self.assertEqual(len(steps), STEPS)
        self.assertTrue(all(event["loss_scale"] == 65536.0 for event in steps))

    def test_overflowing_updates_are_skipped_and_the_scale_backs_off(self):
        # A learning rate of 1e25 blows the weights up after one update: from then on the loss and the
        # gradients are inf/NaN. Unscaled, the run stops at the first such step (train.nonfinite:
        # stop) before the NaN reaches the weights; scaled, every such update is skipped and the
        # scale halves each time.
        blow_up = ("optimizer.type=sgd", "optimizer.learning_rate=1e25")
        unscaled_dir = os.path.join(WORK, "blow-up-unscaled")
        unscaled = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", unscaled_dir, "--set", *blow_up,
                              "train.loss_scale=none", timeout=240)
        self.assertEqual(unscaled.returncode, 1, unscaled.describe())
        self.assertIn("are not finite", unscaled.stderr, unscaled.describe())
        self.assertFalse(os.path.exists(latest(unscaled_dir)), "a run that stopped wrote latest.h5")
        scaled = train("blow-up-scaled", *blow_up, "train.loss_scale=dynamic")
        scaled_weights = e2e.read_checkpoint_arrays(latest(scaled))["model"]
        for name, value in scaled_weights.items():
            self.assertTrue(np.isfinite(value).all(), f"/model/{name} is not finite despite skipped updates")
        skipped = e2e.read_summary(scaled)["loss_scaling"]["skipped_steps"]
        self.assertGreaterEqual(skipped, 1)
        self.assertLess(skipped, STEPS)
        self.assertEqual(e2e.read_summary(scaled)["loss_scaling"]["final_scale"], 65536.0 / 2 ** skipped)
        state = scaler_state(latest(scaled))
        self.assertEqual(state["skipped_steps"], skipped)
        self.assertEqual(state["log2"], 16 - skipped)
        self.assertEqual(state["good_steps"], 0, "the last update overflowed: no good steps since")

    def test_clipping_acts_on_the_unscaled_gradients(self):
        # train.clip_grad_norm clips after the scaler unscales (torch's unscale_, clip, step): the
        # unscaled gradients are those of an unscaled run bit for bit, so are their norms, the clip
        # and the weights. A max norm below the gradients' norms makes every step clip.
        clip = "train.clip_grad_norm=0.05"
        unscaled = train("clipped-unscaled", "train.loss_scale=none", clip)
        scaled = train("clipped-scaled", "train.loss_scale=dynamic", clip)
        expected = e2e.read_checkpoint_arrays(latest(unscaled))["model"]
        actual = e2e.read_checkpoint_arrays(latest(scaled))["model"]
        for name, value in expected.items():
            self.assertTrue(np.array_equal(value.view(np.uint32), actual[name].view(np.uint32)),
                            f"/model/{name} differs with loss scaling under clipping")
        unclipped = e2e.read_checkpoint_arrays(latest(self.unscaled))["model"]
        self.assertTrue(any(not np.array_equal(value, unclipped[name]) for name, value in expected.items()),
                        "clipping changed nothing")
        norms = {run: [event["grad_norm"] for event in e2e.read_metrics(run) if event["event"] == "step"]
                 for run in (unscaled, scaled)}
        self.assertEqual(len(norms[unscaled]), STEPS)
        self.assertEqual(norms[unscaled], norms[scaled])  # the norm of the unscaled gradients
        self.assertTrue(all(norm["max"] > 0.05 for norm in norms[unscaled]), norms[unscaled])

    def test_resume_continues_the_scaler_state(self):
        half = train("first-half", "train.loss_scale=dynamic", f"train.max_steps={STEPS // 2}")
        self.assertEqual(scaler_state(latest(half))["good_steps"], STEPS // 2)
        resumed = train("first-half", "train.loss_scale=dynamic", resume="auto")
        # Counted from the start of the run, not from the resume: the state came from the checkpoint.
        self.assertEqual(scaler_state(latest(resumed)), {"log2": 16, "good_steps": STEPS, "skipped_steps": 0})
        expected = e2e.read_checkpoint_arrays(latest(self.scaled))["model"]
        actual = e2e.read_checkpoint_arrays(latest(resumed))["model"]
        for name, value in expected.items():
            self.assertTrue(np.array_equal(value, actual[name]), f"/model/{name} differs after the resume")

    def test_auto_batch_size_is_refused_on_cpu_ranks(self):
        run_dir = os.path.join(WORK, "auto-batch")
        result = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", run_dir, "--set", "train.batch_size=auto",
                            timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn("train.batch_size: auto", lines[0])
        self.assertFalse(os.path.exists(run_dir), "a refused run must not create its run directory")

    def test_bf16_gradient_compression_is_refused_on_cpu_ranks(self):
        run_dir = os.path.join(WORK, "bf16-gradients")
        result = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", run_dir, "--set",
                            "distributed.grad_dtype=bf16", timeout=120)
        self.assertEqual(result.returncode, 2, result.describe())
        lines = result.error_lines()
        self.assertEqual(len(lines), 1, result.describe())
        self.assertIn("distributed.grad_dtype", lines[0])
        self.assertFalse(os.path.exists(run_dir), "a refused run must not create its run directory")


if __name__ == "__main__":
    e2e.main()
