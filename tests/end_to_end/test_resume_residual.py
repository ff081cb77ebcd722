"""End-to-end: a run's results do not depend on how its steps were split between processes, for
the trainer's fullest CPU path: resnet20 (batch norm with running statistics averaged over
ranks, residual blocks) on 2 ranks, with augmentation on the loader thread (random crop, flip,
RandAugment, cutout, random erasing), streamed data (data.cache: none), a weight average (train.ema,
updated every 2 steps), early stopping and the best checkpoint watching metrics (their state
travels in checkpoints). Two epochs straight, against the same config killed
after a step in the middle of the second epoch and of a log interval, then resumed from its last
periodic checkpoint: every dataset of the final checkpoint (/model, /optimizer, /ema, /state), of best.h5 and of
the periodic checkpoints written after the resume are the same bits, and so are the values of
every step, epoch and eval event the resumed process wrote (losses, accuracies, learning rates)
and of summary.json. The test ties the loop's bookkeeping (which steps it counts where, the loss
sums a checkpoint carries, when buffers are averaged) to the numbers a user sees."""

import os
import shutil
import unittest

import numpy as np

import e2e_common as e2e
from e2e_common import h5py
from test_pretrained_weights import read_safetensors

RANKS, BATCH, EPOCHS = 2, 16, 2
TRAIN, TEST = 256, 64
STEPS_PER_EPOCH = TRAIN // (RANKS * BATCH)  # 8
TOTAL_STEPS = EPOCHS * STEPS_PER_EPOCH  # 16
EVERY_STEPS, LOG_EVERY = 3, 4
KILLED_AFTER = 11  # step 3 of epoch 2 and of the log interval of steps 9-12; resumes at step 9
RESUMED_AT = KILLED_AFTER - KILLED_AFTER % EVERY_STEPS  # 9

# Values a run computes; a resumed run must write the same ones (timings aside).
EVENT_VALUES = {"step": ("loss", "accuracy", "learning_rate", "epoch"),
                "epoch": ("train_loss",),
                "eval": ("test_accuracy", "test_loss", "ema_test_accuracy", "ema_test_loss", "epoch")}


def setUpModule():
    global WORK, CONFIG_PATH, STRAIGHT
    e2e.require_binary()
    WORK = e2e.work_dir("resume_residual")
    data = e2e.make_synth(os.path.join(WORK, "synth32.h5"), train=TRAIN, test=TEST, height=32, width=32,
                          channels=3, seed=7)
    config = e2e.base_config(
        data, name="resume-residual", seed=13, epochs=EPOCHS, batch_size=BATCH, preset="resnet20",
        every_steps=EVERY_STEPS, keep=10, log_every_steps=LOG_EVERY,
        optimizer={"type": "sgd", "learning_rate": 0.05, "momentum": 0.9, "weight_decay": 0.0005},
        schedule={"type": "one_cycle"})
    config["data"]["cache"] = "none"
    config["data"]["augment"] = {"random_crop_padding": 4, "horizontal_flip": True, "cutout": 8,
                                 "random_erasing": {"probability": 0.5}, "rand_augment": {"num_ops": 2}}
    config["train"]["label_smoothing"] = 0.1
    # every_steps 2 against a resume at step 9: the average's schedule follows the global step.
    config["train"]["ema"] = {"decay": 0.9, "every_steps": 2}
    # Patience beyond the run: the state is kept and compared, the run trains both epochs.
    # (On these random labels only the training loss improves in the second epoch.)
    config["train"]["early_stop"] = {"metric": "ema_test_loss", "patience": 5}
    config["checkpoint"]["keep_best"] = "train_loss"
    CONFIG_PATH = e2e.write_config(os.path.join(WORK, "resume-residual.yaml"), config)
    STRAIGHT = os.path.join(WORK, "straight")
    result = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", STRAIGHT, timeout=400)
    if result.returncode != 0:
        raise AssertionError("the straight run failed\n" + result.describe())


def checkpoint(run_dir, name):
    return os.path.join(run_dir, "checkpoints", name)


def event_values(run_dir, after_step=0):
    """{(event, step): (values...)} of the events after `after_step`."""
    found = {}
    for event in e2e.read_metrics(run_dir):
        fields = EVENT_VALUES.get(event["event"])
        if fields is not None and event["step"] > after_step:
            found[(event["event"], event["step"])] = tuple(event[name] for name in fields)
    return found


class ResumeResidualTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # What a kill after step KILLED_AFTER leaves: checkpoints up to RESUMED_AT, metrics up to
        # KILLED_AFTER, no latest.h5 and no summary.
        cls.run_dir = os.path.join(WORK, "killed")
        shutil.rmtree(cls.run_dir, ignore_errors=True)
        first = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", cls.run_dir,
                           "--set", f"train.max_steps={KILLED_AFTER}", timeout=400)
        if first.returncode != 0:
            raise AssertionError("the first part failed\n" + first.describe())
        for name in ("checkpoints/latest.h5", "summary.json"):
            os.remove(os.path.join(cls.run_dir, name))
        cls.resumed = e2e.mpirun(RANKS, "train", CONFIG_PATH, "--run-dir", cls.run_dir, "--resume", "auto",
                                 timeout=400)
        if cls.resumed.returncode != 0:
            raise AssertionError("the resumed part failed\n" + cls.resumed.describe())

    def assert_same_bits(self, expected_path, actual_path):
        groups = ("model", "optimizer", "ema", "state")
        expected = e2e.read_checkpoint_arrays(expected_path, groups)
        actual = e2e.read_checkpoint_arrays(actual_path, groups)
        for group in groups:
            self.assertTrue(expected[group], f"{expected_path} has no /{group}")
            self.assertEqual(sorted(expected[group]), sorted(actual[group]), group)
            for name, value in expected[group].items():
                other = actual[group][name]
                self.assertEqual((value.dtype, value.shape), (other.dtype, other.shape), name)
                same = np.ascontiguousarray(value).tobytes() == np.ascontiguousarray(other).tobytes()
                self.assertTrue(same, f"/{group}/{name} of {os.path.basename(actual_path)} differs after resuming "
                                f"(max |diff| {np.abs(value.astype(np.float64) - other).max():.3g})")

    def test_the_resume_started_where_the_kill_left_it(self):
        self.assertIn(f"resumed from {checkpoint(self.run_dir, f'step-{RESUMED_AT}.h5')}", self.resumed.stdout)
        with h5py.File(checkpoint(self.run_dir, f"step-{RESUMED_AT}.h5"), "r") as file:
            self.assertEqual(int(file["state/step_in_epoch"][()]), RESUMED_AT - STEPS_PER_EPOCH)
            # the log interval's steps before the checkpoint travel in it, on each rank
            self.assertEqual(list(file["state/interval_samples"][()]),
                             [(RESUMED_AT % LOG_EVERY) * BATCH] * RANKS)

    def test_the_comparison_is_not_vacuous(self):
        # The weights the resume started from are not yet the final ones, and batch norm's running
        # statistics are among the compared datasets.
        start = e2e.read_checkpoint_arrays(checkpoint(self.run_dir, f"step-{RESUMED_AT}.h5"), ("model",))["model"]
        final = e2e.read_checkpoint_arrays(checkpoint(STRAIGHT, "latest.h5"), ("model",))["model"]
        self.assertTrue(any(name.endswith("running_mean") for name in final), sorted(final))
        self.assertTrue(any(not np.array_equal(start[name], final[name]) for name in final))

    def test_checkpoints_are_bitwise_those_of_the_straight_run(self):
        self.assert_same_bits(checkpoint(STRAIGHT, "latest.h5"), checkpoint(self.run_dir, "latest.h5"))
        self.assert_same_bits(checkpoint(STRAIGHT, "best.h5"), checkpoint(self.run_dir, "best.h5"))
        for step in range(RESUMED_AT + EVERY_STEPS, TOTAL_STEPS + 1, EVERY_STEPS):
            self.assert_same_bits(checkpoint(STRAIGHT, f"step-{step}.h5"),
                                  checkpoint(self.run_dir, f"step-{step}.h5"))

    def test_metrics_and_summary_are_those_of_the_straight_run(self):
        straight = event_values(STRAIGHT, after_step=RESUMED_AT)
        resumed = event_values(self.run_dir, after_step=KILLED_AFTER)
        self.assertTrue(any(kind == "epoch" for kind, _ in resumed), resumed)
        self.assertTrue(any(kind == "step" for kind, _ in resumed), resumed)
        for key, value in resumed.items():
            self.assertEqual(value, straight[key], key)
        self.assertEqual(sorted(resumed), sorted(key for key in straight if key[1] > KILLED_AFTER))
        summary, straight_summary = e2e.read_summary(self.run_dir), e2e.read_summary(STRAIGHT)
        for key in ("steps", "train_loss", "test_loss", "test_accuracy", "ema_test_loss", "ema_test_accuracy",
                    "early_stop"):
            self.assertEqual(summary[key], straight_summary[key], key)
        for key in ("metric", "epoch", "value"):
            self.assertEqual(summary["best_checkpoint"][key], straight_summary["best_checkpoint"][key], key)
        self.assertFalse(summary["early_stop"]["stopped_early"])

    def test_the_average_and_the_watches_are_in_the_checkpoints(self):
        with h5py.File(checkpoint(STRAIGHT, "latest.h5"), "r") as file:
            self.assertEqual(int(file["state/ema_updates"][()]), TOTAL_STEPS // 2)
            # The average is not the weights (else comparing /ema would add nothing).
            name = "fc/weight"
            self.assertFalse(np.array_equal(file["ema/" + name][()], file["model/" + name][()]))
            names = []
            file["ema"].visit(names.append)
            self.assertTrue(any(entry.endswith("running_mean") for entry in names), names)
            self.assertEqual(e2e.attr_text(file["state/early_stop/best"].attrs["metric"]), "ema_test_loss")
            # The second epoch's evaluation replaced best.h5, so the resumed process wrote its own.
            self.assertEqual(int(file["state/keep_best/best_epoch"][()]), EPOCHS)
            self.assertEqual(e2e.read_summary(STRAIGHT)["best_checkpoint"]["epoch"], EPOCHS)


    def test_the_average_exports_as_the_weights_do(self):
        latest = checkpoint(STRAIGHT, "latest.h5")
        exported = {}
        for kind, extra in (("weights", ()), ("average", ("--ema",))):
            path = os.path.join(WORK, f"exported-{kind}.safetensors")
            result = e2e.phalanx("checkpoint", "export", latest, path, *extra)
            self.assertEqual(result.returncode, 0, result.describe())
            exported[kind] = read_safetensors(path)[0]
        # The same torch names and shapes as the weights' export, so it loads into the same module.
        self.assertEqual({name: value.shape for name, value in exported["average"].items()},
                         {name: value.shape for name, value in exported["weights"].items()})
        average = e2e.read_checkpoint_arrays(latest, ("ema",))["ema"]
        self.assertEqual(sorted(exported["average"]), sorted(name.replace("/", ".") for name in average))
        for name, value in average.items():
            np.testing.assert_array_equal(exported["average"][name.replace("/", ".")], value, err_msg=name)



if __name__ == "__main__":
    e2e.main()
